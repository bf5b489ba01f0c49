@testable import ServiceHarness

/// The notification webhook in process: a body (or a JWS payload under a genuine Apple header) → body
/// reader → verification → app binding → store; WebhookHarness.fuzz(_:) checks the answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebhook(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    WebhookHarness.shared.fuzz(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

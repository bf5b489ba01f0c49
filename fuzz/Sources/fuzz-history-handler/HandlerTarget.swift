@testable import ServiceHarness

/// The getHistory RPC end to end in process: request bytes → decode → contract → handler (the built-in
/// simulator as Apple) → response bytes; ServiceHarness.fuzz(_:input:) checks the answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandler(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    ServiceHarness.shared.fuzz(ServiceHarness.getHistory, input: input)
    return 0
}

@testable import ServiceHarness

/// The App Store Server API RPCs and offer signatures end to end in process: the first byte picks the method,
/// the rest is its request bytes → decode → contract → handler (the built-in simulator as Apple) → response
/// bytes; ServiceHarness.fuzzAPI(input:) checks the answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandler(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    ServiceHarness.shared.fuzzAPI(input: input)
    return 0
}

import ServiceHarness

/// The getHistory RPC end to end in process: request bytes → decode → contract → handler (the built-in simulator as
/// Apple) → response bytes; see ServiceHarness.fuzz(_:input:) for the invariants checked.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandler(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ServiceHarness.shared.fuzz(ServiceHarness.getHistory, input: Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

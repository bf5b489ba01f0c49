@testable import AppStoreDomain

/// Apple's JSON error bodies, as any upstream (or man in the middle) could send them.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppleError(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = AppleErrorBody.parse(bytes, contentType: "application/json")
    _ = AppleErrorBody.parse(bytes, contentType: nil)
    return 0
}

@testable import Configuration

/// The YAML configuration loader: any text either loads or gives a ConfigurationError, never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? GatewayConfiguration.load(yaml: text, environment: ["APPSTORE_GATEWAY_LOGGING_LEVEL": "debug"])
    return 0
}

import GatewayCore

/// The `grpc-timeout` header: 1 to 8 ASCII digits and a unit, H, M, S, m, u or n (PROTOCOL-HTTP2.md).
enum GRPCTimeout {
    /// The timeout in nanoseconds, saturating at UInt64.max; throws INVALID_ARGUMENT when malformed.
    static func parse(_ text: String) throws(RPCStatus) -> UInt64 {
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes.count <= 9, let unit = bytes.last else { throw malformed(text) }
        var value: UInt64 = 0
        for byte in bytes.dropLast() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw malformed(text) }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
        }
        let nanosPerUnit: UInt64
        switch unit {
        case UInt8(ascii: "H"): nanosPerUnit = 3_600_000_000_000
        case UInt8(ascii: "M"): nanosPerUnit = 60_000_000_000
        case UInt8(ascii: "S"): nanosPerUnit = 1_000_000_000
        case UInt8(ascii: "m"): nanosPerUnit = 1_000_000
        case UInt8(ascii: "u"): nanosPerUnit = 1_000
        case UInt8(ascii: "n"): nanosPerUnit = 1
        default: throw malformed(text)
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: nanosPerUnit)
        return overflow ? UInt64.max : product
    }

    private static func malformed(_ text: String) -> RPCStatus {
        RPCStatus(
            .invalidArgument,
            "malformed grpc-timeout header '\(text.prefix(32))': expected 1-8 digits and a unit H, M, S, m, u or n")
    }
}

/// The `grpc-timeout` header: 1 to 8 ASCII digits and a unit, H, M, S, m, u or n (PROTOCOL-HTTP2.md).
enum GRPCTimeout {
    /// The timeout, exactly (8 digits of hours, the most there is, fit a `Duration`); throws INVALID_ARGUMENT
    /// when malformed. Adding it to an instant saturates, so 99999999H is a deadline never reached.
    static func parse(_ text: String) throws(RPCStatus) -> Duration {
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes.count <= 9, let unit = bytes.last else { throw malformed(text) }
        var value: Int64 = 0
        for byte in bytes.dropLast() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw malformed(text) }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        switch unit {
        case UInt8(ascii: "H"): return .seconds(value * 3600)
        case UInt8(ascii: "M"): return .seconds(value * 60)
        case UInt8(ascii: "S"): return .seconds(value)
        case UInt8(ascii: "m"): return .milliseconds(value)
        case UInt8(ascii: "u"): return .microseconds(value)
        case UInt8(ascii: "n"): return .nanoseconds(value)
        default: throw malformed(text)
        }
    }

    private static func malformed(_ text: String) -> RPCStatus {
        RPCStatus(
            .invalidArgument,
            "malformed grpc-timeout header '\(text.prefix(32))': expected 1-8 digits and a unit H, M, S, m, u or n")
    }
}

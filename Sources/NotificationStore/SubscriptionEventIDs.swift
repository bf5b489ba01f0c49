/// Event ids: random (version 4) UUIDs in lowercase, made once when an event is kept, so the same event always
/// carries the same id and two events never share one.
enum SubscriptionEventIDs {
    @Sendable static func random() -> String {
        // Two 64-bit draws of the system generator (two getrandom calls, not one per byte).
        var generator = SystemRandomNumberGenerator()
        var bytes = withUnsafeBytes(of: (generator.next() as UInt64, generator.next() as UInt64)) { Array($0) }
        bytes[6] = bytes[6] & 0x0f | 0x40
        bytes[8] = bytes[8] & 0x3f | 0x80
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

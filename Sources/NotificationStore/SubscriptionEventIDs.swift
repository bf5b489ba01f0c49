/// Event ids: random (version 4) UUIDs in lowercase, made once when an event is kept, so the same event always
/// carries the same id and two events never share one.
enum SubscriptionEventIDs {
    @Sendable static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = bytes[6] & 0x0f | 0x40
        bytes[8] = bytes[8] & 0x3f | 0x80
        let hex = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text.append("-") }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0f)])
        }
        return text
    }
}

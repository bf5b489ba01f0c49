/// Strict base64 codecs (RFC 4648): one alphabet per call, no whitespace, no lenient padding.
///
/// JWS segments use the URL-safe alphabet without padding (RFC 7515 §2); `x5c` entries use the standard
/// alphabet with padding (RFC 7515 §4.1.6). Accepting one where the other is required hides forgeries
/// and bugs, so each decoder rejects anything outside its own form.
public enum Base64 {
    /// Which RFC 4648 form to accept.
    public enum Variant: Sendable {
        /// §4: `+` `/`, padded with `=` to a multiple of 4.
        case standard
        /// §5: `-` `_`, no padding at all (as JWS requires).
        case urlSafeUnpadded
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func makeTable(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(index) }
        return table
    }
    private static let standardTable = makeTable(standardAlphabet)
    private static let urlTable = makeTable(urlAlphabet)

    /// Decodes `text`, or returns nil when it is not exactly in the `variant` form: a character outside
    /// the alphabet, padding where none belongs (or missing where required), an impossible length, or
    /// non-zero bits left over in the last symbol (which would let two strings decode to the same bytes).
    public static func decode(_ text: some StringProtocol, variant: Variant) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(symbols: $0, variant: variant) }
    }

    /// Decodes base64 text given as its ASCII bytes, with the same strictness as `decode(_:variant:)`.
    public static func decode(asciiBytes: ArraySlice<UInt8>, variant: Variant) -> [UInt8]? {
        asciiBytes.withUnsafeBufferPointer { decode(symbols: $0, variant: variant) }
    }

    private static func decode(symbols input: UnsafeBufferPointer<UInt8>, variant: Variant) -> [UInt8]? {
        var count = input.count
        switch variant {
        case .standard:
            guard count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, count > 0, input[count - 1] == UInt8(ascii: "=") {
                count -= 1
                padding += 1
            }
        case .urlSafeUnpadded:
            break
        }
        guard count % 4 != 1 else { return nil }
        let table = variant == .standard ? standardTable : urlTable
        return table.withUnsafeBufferPointer { table in
            var output = [UInt8](repeating: 0, count: count * 3 / 4)
            var accumulator: UInt32 = 0
            var bits: UInt32 = 0
            var written = 0
            let valid = output.withUnsafeMutableBufferPointer { output in
                for position in 0..<count {
                    let value = table[Int(input[position])]
                    guard value != 0xFF else { return false }
                    accumulator = (accumulator << 6) | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        output[written] = UInt8(truncatingIfNeeded: accumulator >> bits)
                        written += 1
                        accumulator &= (1 << bits) - 1
                    }
                }
                return accumulator == 0
            }
            guard valid, written == output.count else { return nil }
            return output
        }
    }

    /// Encodes `bytes` in the `variant` form.
    public static func encode(_ bytes: some Collection<UInt8>, variant: Variant) -> String {
        let alphabet = variant == .standard ? standardAlphabet : urlAlphabet
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            if second != nil { output.append(alphabet[Int(group >> 6 & 63)]) }
            if third != nil { output.append(alphabet[Int(group & 63)]) }
            if variant == .standard {
                if second == nil { output.append(UInt8(ascii: "=")) }
                if third == nil { output.append(UInt8(ascii: "=")) }
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

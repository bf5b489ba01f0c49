/// The one base64 codec (RFC 4648), strict: one form per call, no whitespace, no lenient padding.
///
/// JWS segments use the URL-safe alphabet without padding (RFC 7515 §2); `x5c` entries use the standard
/// alphabet with padding (RFC 7515 §4.1.6); gRPC `-bin` metadata is standard base64, emitted unpadded.
/// Accepting one form where another is required hides forgeries and bugs, so each decoder rejects
/// anything outside its own form.
public enum Base64 {
    /// Which RFC 4648 form to accept.
    public enum Variant: Sendable {
        /// §4: `+` `/`, padded with `=` to a multiple of 4.
        case standard
        /// §4's alphabet without any padding (gRPC `-bin` metadata as servers should emit it).
        case standardUnpadded
        /// §5: `-` `_`, no padding at all (as JWS requires).
        case urlSafeUnpadded
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A decoding table, made once and kept for the process's life: a plain pointer, so a decode retains no
    /// storage every thread reads (an array's would be retained and released by every call on every loop).
    private static func makeTable(_ alphabet: [UInt8]) -> UnsafePointer<UInt8> {
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        table.initialize(repeating: 0xFF, count: 256)
        for (index, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(index) }
        return UnsafePointer(table)
    }
    // Written once, by the global's one-time initialiser, before any reader sees it; only read after.
    nonisolated(unsafe) private static let standardTable = makeTable(standardAlphabet)
    nonisolated(unsafe) private static let urlTable = makeTable(urlAlphabet)

    /// Decodes `text`, or returns nil when it is not exactly in the `variant` form: a character outside
    /// the alphabet, padding where none belongs (or missing where required), an impossible length, or
    /// non-zero bits left over in the last symbol (which would let two strings decode to the same bytes).
    public static func decode(_ text: some StringProtocol, variant: Variant) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(symbols: $0, variant: variant) }
    }

    /// Whether `text` is exactly in the `variant` form and decodes to at least `minimumCount` bytes,
    /// checked as strictly as `decode(_:variant:)` but without producing the bytes.
    public static func isValid(_ text: String, variant: Variant, minimumCount: Int = 0) -> Bool {
        var text = text
        return text.withUTF8 { input in
            guard let count = symbolCount(input, variant: variant), count * 3 / 4 >= minimumCount else { return false }
            return run(input, count: count, table: variant == .urlSafeUnpadded ? urlTable : standardTable, output: nil)
        }
    }

    /// Decodes base64 text given as ASCII bytes in memory, with the same strictness as `decode(_:variant:)`.
    public static func decode(ascii: UnsafeBufferPointer<UInt8>, variant: Variant) -> [UInt8]? {
        decode(symbols: ascii, variant: variant)
    }

    private static func decode(symbols input: UnsafeBufferPointer<UInt8>, variant: Variant) -> [UInt8]? {
        guard let count = symbolCount(input, variant: variant) else { return nil }
        let table = variant == .urlSafeUnpadded ? urlTable : standardTable
        var valid = false
        let output = [UInt8](unsafeUninitializedCapacity: count * 3 / 4) { output, initialized in
            valid = run(input, count: count, table: table, output: output.baseAddress)
            // Every byte is written when the input is valid; zero-fill otherwise so the array is defined.
            if !valid { output.initialize(repeating: 0) }
            initialized = output.count
        }
        return valid ? output : nil
    }

    /// The number of alphabet symbols in `input` (padding removed), or nil for an impossible length or
    /// padding where the variant forbids or requires it.
    private static func symbolCount(_ input: UnsafeBufferPointer<UInt8>, variant: Variant) -> Int? {
        var count = input.count
        switch variant {
        case .standard:
            guard count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, count > 0, input[count - 1] == UInt8(ascii: "=") {
                count -= 1
                padding += 1
            }
        case .urlSafeUnpadded, .standardUnpadded:
            break
        }
        return count % 4 == 1 ? nil : count
    }

    /// Decodes `count` symbols through `table` (0xFF marks a symbol outside the alphabet) into `output`
    /// (count * 3 / 4 bytes), or only checks them when `output` is nil. False for a symbol outside the
    /// alphabet or non-zero bits left over in the last symbol (which would let two strings decode to the
    /// same bytes). Whole 4-symbol groups first, 24 bits at a time; then the 2- or 3-symbol tail.
    private static func run(
        _ input: UnsafeBufferPointer<UInt8>, count: Int, table: UnsafePointer<UInt8>,
        output: UnsafeMutablePointer<UInt8>?
    ) -> Bool {
        guard let symbols = input.baseAddress else { return count == 0 }
        var invalid: UInt32 = 0
        var position = 0
        var written = 0
        let whole = count & ~3
        while position < whole {
            let a = UInt32(table[Int(symbols[position])])
            let b = UInt32(table[Int(symbols[position + 1])])
            let c = UInt32(table[Int(symbols[position + 2])])
            let d = UInt32(table[Int(symbols[position + 3])])
            invalid |= a | b | c | d
            if let output {
                let group = a << 18 | b << 12 | c << 6 | d
                output[written] = UInt8(truncatingIfNeeded: group >> 16)
                output[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                output[written + 2] = UInt8(truncatingIfNeeded: group)
            }
            position += 4
            written += 3
        }
        // Any 0xFF from the table sets bit 7, which no valid 6-bit value has.
        guard invalid & 0x80 == 0 else { return false }
        let tail = count - whole
        guard tail > 0 else { return true }
        let a = UInt32(table[Int(symbols[position])])
        let b = UInt32(table[Int(symbols[position + 1])])
        let c = tail == 3 ? UInt32(table[Int(symbols[position + 2])]) : 0
        guard (a | b | c) & 0x80 == 0 else { return false }
        let group = a << 18 | b << 12 | c << 6
        // Leftover bits: 4 from `b` with 2 symbols, 2 from `c` with 3.
        guard group & (tail == 2 ? 0xFFFF : 0xFF) == 0 else { return false }
        if let output {
            output[written] = UInt8(truncatingIfNeeded: group >> 16)
            if tail == 3 { output[written + 1] = UInt8(truncatingIfNeeded: group >> 8) }
        }
        return true
    }

    /// Encodes `bytes` in the `variant` form.
    public static func encode(_ bytes: some Collection<UInt8>, variant: Variant) -> String {
        let alphabet = variant == .urlSafeUnpadded ? urlAlphabet : standardAlphabet
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

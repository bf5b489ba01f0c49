/// A strict RFC 8259 JSON parser for whatever arrives from outside (Apple's answers, JWS payloads and JOSE
/// headers): no trailing commas, comments or non-standard literals, a nesting limit, exact int64 integers.
/// Safe on hostile input: it never traps, its memory is bounded by the input's size, and deep nesting is
/// refused rather than recursed into. Far faster than Foundation's JSONDecoder (which goes through
/// `Decodable` and, on Linux, a tree of its own). Duplicate object keys keep the last value, as most parsers do.
public struct JSONParser {
    private let bytes: [UInt8]

    /// A parser of `bytes`.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// The single value of the document, or nil on any syntax error or trailing garbage.
    public mutating func parseDocument() -> JSONValue? {
        bytes.withUnsafeBufferPointer { Self.parseDocument($0) }
    }

    /// The single value of the document in `buffer` (read only during the call), or nil on any syntax
    /// error or trailing garbage.
    public static func parseDocument(_ buffer: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        guard let base = buffer.baseAddress else { return nil }
        var scanner = Scanner(bytes: base, count: buffer.count)
        return scanner.parseDocument()
    }
}

/// The parser proper, over memory it does not own; indices are checked against `count` explicitly.
private struct Scanner {
    private let bytes: UnsafePointer<UInt8>
    private let count: Int
    private var index = 0
    private var depth = 0
    private static let maximumDepth = 64
    /// Members of the objects being parsed, innermost last: an object's dictionary is built once its size is
    /// known (one allocation, no rehashing as it grows), and this one array serves every object of the parse.
    private var pendingMembers: [(key: String, value: JSONValue)] = []

    init(bytes: UnsafePointer<UInt8>, count: Int) {
        self.bytes = bytes
        self.count = count
    }

    mutating func parseDocument() -> JSONValue? {
        guard let value = parseValue() else { return nil }
        skipWhitespace()
        return index == count ? value : nil
    }

    private mutating func skipWhitespace() {
        while index < count,
            bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09
        {
            index += 1
        }
    }

    private mutating func parseValue() -> JSONValue? {
        skipWhitespace()
        guard index < count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return parseObject()
        case UInt8(ascii: "["): return parseArray()
        case UInt8(ascii: "\""): return parseString().map(JSONValue.string)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return parseNumber()
        }
    }

    private mutating func literal(_ text: StaticString, _ value: JSONValue) -> JSONValue? {
        let length = text.utf8CodeUnitCount
        guard index + length <= count else { return nil }
        for offset in 0..<length where bytes[index + offset] != text.utf8Start[offset] { return nil }
        index += length
        return value
    }

    private mutating func parseObject() -> JSONValue? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth, let hasMembers = beginObject() else { return nil }
        guard hasMembers else { return .object([:]) }
        let first = pendingMembers.count
        defer { pendingMembers.removeSubrange(first...) }
        while true {
            guard let (key, value, more) = nextMember() else { return nil }
            pendingMembers.append((key.string, value))
            if !more { break }
        }
        // Room for the usual sizes at once; duplicate keys (counted here) must not reserve unused room.
        var members = [String: JSONValue](minimumCapacity: min(pendingMembers.count - first, 64))
        for member in pendingMembers[first...] { members[member.key] = member.value }  // duplicates: the last
        return .object(members)
    }

    /// Steps over an object's opening brace: whether members follow (false for `{}`), nil at the end of input.
    private mutating func beginObject() -> Bool? {
        index += 1
        skipWhitespace()
        guard index < count else { return nil }
        if bytes[index] == UInt8(ascii: "}") {
            index += 1
            return false
        }
        return true
    }

    /// The object member at `index` (after the brace or a comma) and whether another follows (false once the
    /// closing brace is passed); nil on a syntax error.
    private mutating func nextMember() -> (key: Key, value: JSONValue, more: Bool)? {
        skipWhitespace()
        guard index < count, bytes[index] == UInt8(ascii: "\""), let key = parseKey() else { return nil }
        skipWhitespace()
        guard index < count, bytes[index] == UInt8(ascii: ":") else { return nil }
        index += 1
        guard let value = parseValue() else { return nil }
        skipWhitespace()
        guard index < count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            return (key, value, true)
        case UInt8(ascii: "}"):
            index += 1
            return (key, value, false)
        default:
            return nil
        }
    }

    private mutating func parseArray() -> JSONValue? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { return nil }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            guard let value = parseValue() else { return nil }
            elements.append(value)
            skipWhitespace()
            guard index < count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            } else {
                return nil
            }
        }
    }

    /// From inside a string, the run of bytes up to its closing quote or first backslash (where `index` is
    /// left) and whether the run is all ASCII; nil at the end of the input or at a control character.
    /// Sixteen bytes at a time (one vector compare each) while none is a quote, a backslash or a control
    /// character, then eight at a time (the word tests are exact for "some byte is"); the byte loop finishes
    /// the run.
    private mutating func scanPlainRun() -> (run: UnsafeBufferPointer<UInt8>, ascii: Bool)? {
        let start = index
        let quotes = SIMD16<UInt8>(repeating: UInt8(ascii: "\""))
        let backslashes = SIMD16<UInt8>(repeating: UInt8(ascii: "\\"))
        let spaces = SIMD16<UInt8>(repeating: 0x20)
        var wideVector = SIMD16<UInt8>()
        while index + 16 <= count {
            let vector = UnsafeRawPointer(bytes + index).loadUnaligned(as: SIMD16<UInt8>.self)
            // Read as two words: the standard library's `any` is a lane-by-lane loop, not one instruction.
            let special = unsafeBitCast(
                (vector .== quotes) .| (vector .== backslashes) .| (vector .< spaces), to: SIMD2<UInt64>.self)
            guard special[0] | special[1] == 0 else { break }
            wideVector |= vector
            index += 16
        }
        let wideWords = unsafeBitCast(wideVector, to: SIMD2<UInt64>.self)
        var wide = wideWords[0] | wideWords[1]
        while index + 8 <= count {
            let word = UInt64(littleEndian: UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self))
            let quote = word ^ (Self.ones &* UInt64(UInt8(ascii: "\"")))
            let backslash = word ^ (Self.ones &* UInt64(UInt8(ascii: "\\")))
            let special =
                Self.hasZeroByte(quote) | Self.hasZeroByte(backslash)
                | ((word &- Self.ones &* 0x20) & ~word & Self.highBits)
            guard special == 0 else { break }
            wide |= word
            index += 8
        }
        var combined: UInt8 = wide & Self.highBits == 0 ? 0 : 0x80
        while index < count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
            guard bytes[index] >= 0x20 else { return nil }
            combined |= bytes[index]
            index += 1
        }
        guard index < count else { return nil }
        return (UnsafeBufferPointer(start: bytes + start, count: index - start), combined < 0x80)
    }

    /// An object key's UTF-8 bytes: where they lie in the input when the key has no escapes (no String is
    /// made; valid as long as the input), else unescaped.
    fileprivate enum Key {
        case raw(UnsafeBufferPointer<UInt8>)
        case decoded(String)

        /// The key as a String (its bytes are valid UTF-8: `parseKey` checked them).
        var string: String {
            switch self {
            case .raw(let bytes): String(decoding: bytes, as: UTF8.self)
            case .decoded(let text): text
            }
        }
    }

    /// An object key starting at its opening quote; nil when it is not a valid string.
    fileprivate mutating func parseKey() -> Key? {
        let opening = index
        index += 1
        guard let (run, ascii) = scanPlainRun() else { return nil }
        if bytes[index] == UInt8(ascii: "\"") {
            index += 1
            guard ascii || String(validating: run, as: UTF8.self) != nil else { return nil }
            return .raw(run)
        }
        index = opening
        return parseString().map(Key.decoded)
    }

    /// A string starting at the opening quote; validates UTF-8 and escapes (surrogate pairs included).
    private mutating func parseString() -> String? {
        index += 1
        guard let (run, ascii) = scanPlainRun() else { return nil }
        if bytes[index] == UInt8(ascii: "\"") {
            index += 1
            // ASCII is valid UTF-8 as it is; anything else is validated (nil when invalid).
            return ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
        }
        var scalars = Array(run)
        while index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(validating: scalars, as: UTF8.self)
            }
            guard byte >= 0x20 else { return nil }
            guard byte == UInt8(ascii: "\\") else {
                scalars.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < count else { return nil }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
            case UInt8(ascii: "b"): scalars.append(0x08)
            case UInt8(ascii: "f"): scalars.append(0x0C)
            case UInt8(ascii: "n"): scalars.append(0x0A)
            case UInt8(ascii: "r"): scalars.append(0x0D)
            case UInt8(ascii: "t"): scalars.append(0x09)
            case UInt8(ascii: "u"):
                guard var code = hex4() else { return nil }
                if (0xD800..<0xDC00).contains(code) {
                    guard index + 1 < count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    else { return nil }
                    index += 2
                    guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(code) {
                    return nil
                }
                guard let scalar = Unicode.Scalar(code) else { return nil }
                scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
            default: return nil
            }
        }
        return nil
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Non-zero exactly when some byte of `word` is zero.
    private static func hasZeroByte(_ word: UInt64) -> UInt64 { (word &- ones) & ~word & highBits }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; integers that fit are exact int64.
    private mutating func parseNumber() -> JSONValue? {
        let start = index
        if index < count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count, isDigit(bytes[index]) else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < count, isDigit(bytes[index]) { index += 1 }
        }
        var isInteger = true
        if index < count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < count, isDigit(bytes[index]) else { return nil }
            while index < count, isDigit(bytes[index]) { index += 1 }
        }
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < count, isDigit(bytes[index]) else { return nil }
            while index < count, isDigit(bytes[index]) { index += 1 }
        }
        // Up to 18 digits always fit in Int64: accumulate them directly (same value as Int64(text)).
        let negative = bytes[start] == UInt8(ascii: "-")
        let digits = index - start - (negative ? 1 : 0)
        if isInteger, digits <= 18 {
            var value: Int64 = 0
            for position in (negative ? start + 1 : start)..<index {
                value = value * 10 + Int64(bytes[position] &- 0x30)
            }
            return .integer(negative ? -value : value)
        }
        let text = String(decoding: UnsafeBufferPointer(start: bytes + start, count: index - start), as: UTF8.self)
        if isInteger, let value = Int64(text) { return .integer(value) }
        return Double(text).map(JSONValue.number)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}

extension JSONParser {
    /// The JSON object in `buffer` (read only during the call) with its members found by key bytes
    /// (`JSONMembers`), or nil on any syntax error, trailing garbage, or a document that is not an object.
    public static func parseMembers(_ buffer: UnsafeBufferPointer<UInt8>) -> JSONMembers? {
        guard let base = buffer.baseAddress else { return nil }
        var scanner = Scanner(bytes: base, count: buffer.count)
        return scanner.parseMembersDocument()
    }
}

extension Scanner {
    /// A document that is one object, its members in a `JSONMembers` (values parsed as everywhere else).
    fileprivate mutating func parseMembersDocument() -> JSONMembers? {
        skipWhitespace()
        guard index < count, bytes[index] == UInt8(ascii: "{") else { return nil }
        depth += 1
        guard let hasMembers = beginObject() else { return nil }
        var members = JSONMembers()
        while hasMembers {
            guard let (key, value, more) = nextMember() else { return nil }
            switch key {
            case .raw(let bytes): members.set(value, forKey: bytes)
            case .decoded(var text): text.withUTF8 { members.set(value, forKey: $0) }
            }
            if !more { break }
        }
        depth -= 1
        skipWhitespace()
        return index == count ? members : nil
    }
}

#if canImport(Glibc)
    import Glibc
#endif

/// A statement parameter (`$1`, `$2`, …; a NULL is `nil` in the parameter list). Parameters travel apart from the
/// statement's text, so quotes, backslashes and any Unicode in them need no escaping. Text, numbers and booleans
/// are sent in PostgreSQL's text form with their type; bytes in binary, as `bytea`.
package enum PostgresValue: Sendable, Hashable {
    /// A `text` value. PostgreSQL's text cannot hold a NUL character: a value with one is refused before anything
    /// is sent (`.invalidRequest`). For another type written as text (a timestamp, JSON, a UUID), cast in the statement (`$1::jsonb`)
    /// or use `untyped`.
    case text(String)
    /// A value whose type the server infers from where it is used (the parameter's type is left `unknown`), written
    /// in that type's text form: `untyped("2026-01-01T00:00:00Z")` for a `timestamptz` column.
    case untyped(String)
    /// An `int8` (`bigint`); PostgreSQL casts it to a narrower integer column on assignment.
    case integer(Int64)
    /// A `float8` (`double precision`); infinities and NaN included.
    case double(Double)
    /// A `boolean`.
    case boolean(Bool)
    /// A `bytea`, sent in binary (any bytes, NUL included).
    case bytes([UInt8])
    /// A `text[]` (one dimension, no NULL elements), for `unnest($n::text[])`: sent as an array literal, every element
    /// quoted. Like `text`, an element with a NUL character is refused before anything is sent.
    case textArray([String])

    /// The type the parameter is declared with (0: left to the server).
    var typeOID: UInt32 {
        switch self {
        case .text: PostgresType.text
        case .untyped: 0
        case .integer: PostgresType.int8
        case .double: PostgresType.float8
        case .boolean: PostgresType.bool
        case .bytes: PostgresType.bytea
        case .textArray: PostgresType.textArray
        }
    }

    /// 0 for text, 1 for binary.
    var format: Int32 {
        if case .bytes = self { return 1 }
        return 0
    }

    /// The bytes sent for the value.
    var encoded: [UInt8] {
        switch self {
        case .text(let text), .untyped(let text): Array(text.utf8)
        case .integer(let value): Array(String(value).utf8)
        case .double(let value): Array(Self.text(of: value).utf8)
        case .boolean(let value): value ? [UInt8(ascii: "t")] : [UInt8(ascii: "f")]
        case .bytes(let bytes): bytes
        case .textArray(let elements): Self.arrayLiteral(elements)
        }
    }

    /// `elements` as PostgreSQL's array input reads them (`{"a","b \"c\""}` for `a` and `b "c"`): each element in
    /// double quotes with its quotes and backslashes escaped by a backslash (so commas, braces, spaces and `NULL`
    /// stay text).
    static func arrayLiteral(_ elements: [String]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(2 + elements.reduce(0) { $0 + $1.utf8.count + 3 })
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `value` as `float8in` reads it: the shortest text that reads back as the same double.
    private static func text(of value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return value.description
    }
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral
{
    package init(stringLiteral value: String) { self = .text(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(booleanLiteral value: Bool) { self = .boolean(value) }
    package init(floatLiteral value: Double) { self = .double(value) }
}

/// The type OIDs the client names (PostgreSQL's fixed catalogue numbers, `pg_type.oid`).
package enum PostgresType {
    package static let bool: UInt32 = 16
    package static let bytea: UInt32 = 17
    package static let int8: UInt32 = 20
    package static let int2: UInt32 = 21
    package static let int4: UInt32 = 23
    package static let text: UInt32 = 25
    package static let oid: UInt32 = 26
    package static let json: UInt32 = 114
    package static let float4: UInt32 = 700
    package static let float8: UInt32 = 701
    package static let varchar: UInt32 = 1043
    package static let timestamptz: UInt32 = 1184
    package static let numeric: UInt32 = 1700
    package static let uuid: UInt32 = 2950
    package static let jsonb: UInt32 = 3802
    package static let textArray: UInt32 = 1009
}

extension PostgresValue {
    /// Whether `text` holds a NUL character, which PostgreSQL's text cannot store: one `memchr` over its bytes (a
    /// notification's text is ~10 kB).
    package static func holdsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }
}

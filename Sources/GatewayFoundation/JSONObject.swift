/// A JSON object from outside (an Apple answer), read field by field the way an optional `Decodable` field
/// reads: a field that is absent or `null` is nil, one of another type is a `JSONFieldMismatch`. Parsed by
/// `JSONParser`, so a hostile body costs time and memory in proportion to its size and never traps.
public struct JSONObject: Sendable, Hashable {
    /// The object's members (duplicate keys: the last one).
    public let members: [String: JSONValue]

    /// `members` as an object.
    public init(_ members: [String: JSONValue]) { self.members = members }

    /// `bytes` parsed as one JSON object; nil when they are not valid JSON or not an object.
    public init?(parsing bytes: [UInt8]) {
        guard let members = JSONValue.object(from: bytes) else { return nil }
        self.members = members
    }

    /// The string at `key`.
    public func string(_ key: String) throws(JSONFieldMismatch) -> String? {
        try field(key, \.string)
    }

    /// The boolean at `key`.
    public func bool(_ key: String) throws(JSONFieldMismatch) -> Bool? {
        try field(key, \.bool)
    }

    /// The integer at `key` (a number with a fraction is a mismatch; `1.7e12` is an integer).
    public func int64(_ key: String) throws(JSONFieldMismatch) -> Int64? {
        try field(key, \.int64)
    }

    /// The array of strings at `key`; any element that is not a string is a mismatch.
    public func strings(_ key: String) throws(JSONFieldMismatch) -> [String]? {
        guard let elements = try field(key, \.array) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard let string = element.string else { throw JSONFieldMismatch(key: key) }
            strings.append(string)
        }
        return strings
    }

    /// The array of objects at `key`; any element that is not an object is a mismatch.
    public func objects(_ key: String) throws(JSONFieldMismatch) -> [JSONObject]? {
        guard let elements = try field(key, \.array) else { return nil }
        var objects: [JSONObject] = []
        objects.reserveCapacity(elements.count)
        for element in elements {
            guard let members = element.object else { throw JSONFieldMismatch(key: key) }
            objects.append(JSONObject(members))
        }
        return objects
    }

    private func field<Value>(_ key: String, _ read: (JSONValue) -> Value?) throws(JSONFieldMismatch) -> Value? {
        guard let value = members[key] else { return nil }
        if case .null = value { return nil }
        guard let typed = read(value) else { throw JSONFieldMismatch(key: key) }
        return typed
    }
}

/// A field of a JSON object holds a value of another type than the one read.
public struct JSONFieldMismatch: Error, Sendable, Hashable {
    /// The field's key.
    public var key: String

    /// A mismatch at `key`.
    public init(key: String) { self.key = key }
}

import Foundation

extension RequestContract {
    /// Bytes of a `requestIdentifier` (Apple's documented maximum).
    static let maxRequestIdentifierBytes = 128
    /// Bytes of a test notification token.
    static let maxTokenBytes = 128
    /// Characters of an order id.
    static let maxOrderIDCharacters = 64

    /// A value that becomes one URL path segment or a token: 1 to `max` ASCII letters, digits, '-', '_' and
    /// '.', and not "." or ".." (so no path can be walked out of).
    mutating func segment(_ value: String, field: String, max: Int, required: Bool = true) {
        if value.isEmpty {
            if required { refuse(field, "is required") }
            return
        }
        let utf8 = value.utf8
        let allowed = utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
        guard utf8.count <= max, allowed, value != ".", value != ".." else {
            refuse(field, "must be 1 to \(max) ASCII letters, digits, '-', '_' or '.'")
            return
        }
    }

    /// An order id: 1 to 64 ASCII letters and digits.
    mutating func orderID(_ value: String, field: String) {
        let utf8 = value.utf8
        let alphanumeric = utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
        }
        if value.isEmpty {
            refuse(field, "is required")
        } else if utf8.count > Self.maxOrderIDCharacters || !alphanumeric {
            refuse(field, "must be 1 to \(Self.maxOrderIDCharacters) ASCII letters and digits")
        }
    }

    /// A UUID string in Apple's 8-4-4-4-12 hex form.
    mutating func uuid(_ value: String, field: String, required: Bool) {
        if value.isEmpty {
            if required { refuse(field, "is required (a UUID)") }
            return
        }
        if value.utf8.count != 36 || UUID(uuidString: value) == nil {
            refuse(field, "must be a UUID such as 7e3fb20b-4cdb-47cc-936d-99d65f608138")
        }
    }

    /// A whole number within `range`.
    mutating func number(_ value: Int64, field: String, in range: ClosedRange<Int64>) {
        if !range.contains(value) { refuse(field, "must be between \(range.lowerBound) and \(range.upperBound)") }
    }
}

internal import CLinux

#if canImport(Glibc)
    import Glibc
#endif

/// Strings that arrive on every request — method paths, common header names and values — made once, so
/// a request head costs no String allocation for them: bytes are matched against the table (by length
/// first, then their bytes) and the stored String is shared, with its position in the list the table was
/// made from (a responder can keep what belongs to each string in an array beside it: no hashing).
public struct InternTable: Sendable {
    private struct Entry: Sendable {
        let bytes: [UInt8]
        let string: String
        let index: Int
    }

    /// Entries by their byte length (index = length).
    private let byLength: [[Entry]]

    /// Header names and values every gRPC client sends (grpcio, grpc-go, grpc-java), the `:method` and
    /// `:scheme` values among them.
    public static let commonHeaders = [
        "POST", "http", "https", "content-type", "application/grpc", "application/grpc+proto", "te", "trailers",
        "user-agent",
        "grpc-accept-encoding", "accept-encoding", "identity,deflate,gzip", "identity,gzip", "identity",
        "gzip", "deflate", "grpc-timeout", "grpc-encoding", "authorization", "x-request-id", "traceparent",
        "tracestate",
    ]

    /// The common headers alone (a responder without paths of its own).
    public static let common = InternTable(commonHeaders)

    /// A table of every one of `strings` (a repeated one keeps its first index): a responder routes by these
    /// indexes, so none may be left out, however long.
    public init(_ strings: [String]) {
        var byLength = [[Entry]](repeating: [], count: (strings.map(\.utf8.count).max() ?? 0) + 1)
        for (index, string) in strings.enumerated() {
            guard !byLength[string.utf8.count].contains(where: { $0.string == string }) else { continue }
            byLength[string.utf8.count].append(Entry(bytes: Array(string.utf8), string: string, index: index))
        }
        self.byLength = byLength
    }

    /// The table's String for these bytes and its index in the list the table was made from, or nil.
    public func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> (string: String, index: Int)? {
        guard bytes.count < byLength.count, !bytes.isEmpty, let base = bytes.baseAddress else { return nil }
        for entry in byLength[bytes.count] {
            let equal = entry.bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, base, bytes.count) == 0 }
            if equal { return (entry.string, entry.index) }
        }
        return nil
    }

    /// The table's String for these bytes, or a new one.
    public func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        lookup(bytes)?.string ?? String(decoding: bytes, as: UTF8.self)
    }
}

/// The last few strings a connection made from header bytes, reused when the same bytes come again (at
/// most 8, each at most 1 KiB, replaced in turn).
struct RecentStrings {
    private var strings: [String] = []
    private var next = 0
    private static let capacity = 8
    private static let maxLength = 1024

    /// The String for `bytes`: a recent one with the same bytes, or a new one (remembered when short).
    mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if bytes.isEmpty { return "" }
        guard bytes.count <= Self.maxLength, let base = bytes.baseAddress else {
            return String(decoding: bytes, as: UTF8.self)
        }
        for index in strings.indices {
            var candidate = strings[index]
            let same = candidate.withUTF8 { $0.count == bytes.count && memcmp($0.baseAddress!, base, bytes.count) == 0 }
            if same { return candidate }
        }
        let made = String(decoding: bytes, as: UTF8.self)
        if strings.count < Self.capacity {
            strings.append(made)
        } else {
            strings[next] = made
            next = (next + 1) % Self.capacity
        }
        return made
    }
}

/// Strings that arrive on every request — method paths, common header names and values — made once, so
/// a request head costs no String allocation for them: bytes are matched against the table (by length
/// first, then their bytes) and the stored String is shared.
public struct InternTable: Sendable {
    private struct Entry: Sendable {
        let bytes: [UInt8]
        let string: String
    }

    /// Entries by their byte length; longer strings are never interned.
    private let byLength: [[Entry]]
    private static let maxLength = 96

    /// Header names and values every gRPC client sends (grpcio, grpc-go, grpc-java).
    public static let commonHeaders = [
        "content-type", "application/grpc", "application/grpc+proto", "te", "trailers", "user-agent",
        "grpc-accept-encoding", "accept-encoding", "identity,deflate,gzip", "identity,gzip", "identity",
        "gzip", "deflate", "grpc-timeout", "grpc-encoding", "authorization", "x-request-id", "traceparent",
        "tracestate",
    ]

    /// A table of `strings` (those longer than 96 bytes are left out).
    public init(_ strings: [String]) {
        var byLength = [[Entry]](repeating: [], count: Self.maxLength + 1)
        for string in Set(strings) where string.utf8.count <= Self.maxLength {
            byLength[string.utf8.count].append(Entry(bytes: Array(string.utf8), string: string))
        }
        self.byLength = byLength
    }

    /// The table's String for these bytes, or nil.
    public func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count <= Self.maxLength else { return nil }
        for entry in byLength[bytes.count] where entry.bytes.withUnsafeBufferPointer({ $0.elementsEqual(bytes) }) {
            return entry.string
        }
        return nil
    }

    /// The table's String for these bytes, or a new one.
    public func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        lookup(bytes) ?? String(decoding: bytes, as: UTF8.self)
    }
}

/// Caller-supplied text quoted back in an error (an unknown app name, a method path): clipped so an error
/// about a huge input stays small and still fits a status trailer.
public enum EchoedInput {
    /// Most UTF-8 bytes of caller text an error message or detail repeats.
    public static let maxBytes = 128

    /// `text` when it has at most `maxBytes` UTF-8 bytes; otherwise its longest prefix of whole characters
    /// within that, followed by "…(N bytes)" so the reader knows it was cut.
    public static func clip(_ text: String, maxBytes: Int = maxBytes) -> String {
        let total = text.utf8.count
        guard total > maxBytes else { return text }
        var kept = 0
        var end = text.startIndex
        for index in text.indices {
            let next = text.index(after: index)
            let size = text.utf8.distance(from: index, to: next)
            if kept + size > maxBytes { break }
            kept += size
            end = next
        }
        return "\(text[..<end])...(\(total) bytes)"
    }
}

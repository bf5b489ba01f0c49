/// The lines of a request head, split at CRLF (a CR not followed by LF stays in its line, for the parser to
/// refuse).
struct HTTP1HeadLines: IteratorProtocol {
    private var rest: ArraySlice<UInt8>
    private var done = false

    init(_ head: ArraySlice<UInt8>) { rest = head }

    mutating func next() -> ArraySlice<UInt8>? {
        guard !done else { return nil }
        var index = rest.startIndex
        while index < rest.endIndex {
            if rest[index] == HTTP1Syntax.cr, index + 1 < rest.endIndex, rest[index + 1] == HTTP1Syntax.lf {
                let line = rest[..<index]
                rest = rest[(index + 2)...]
                return line
            }
            index += 1
        }
        done = true
        return rest
    }
}

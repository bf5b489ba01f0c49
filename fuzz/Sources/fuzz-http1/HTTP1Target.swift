@testable import HTTPServer

/// The HTTP/1.1 request parser over arbitrary bytes arriving in arbitrary pieces, as a webhook or admin
/// connection would read them. The first byte picks the piece size, so the fuzzer explores splits as well as
/// contents. Every request it takes out must fit what arrived and the limits; after a failure the connection
/// would close, so nothing more is parsed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let piece = Int(input[0] % 64) + 1
    let maxHead = 512
    let maxBody = 256
    var parser = HTTP1RequestParser(maxHeadBytes: maxHead, maxBodyBytes: maxBody)
    var buffer: [UInt8] = []
    var offset = 1
    var consumed = 0
    while offset < size {
        let end = min(size, offset + piece)
        buffer += input[offset..<end]
        offset = end
        while true {
            let before = buffer.count
            switch parser.parse(&buffer) {
            case .incomplete:
                precondition(buffer.count <= before, "an incomplete parse grew the buffer")
            case .request(let request, _):
                precondition(request.body.count <= maxBody, "a body over the limit was accepted")
                consumed += before - buffer.count
                precondition(consumed <= size, "the parser took more bytes than arrived")
                continue
            case .failure(let status, _):
                precondition((400..<600).contains(status), "a failure without an error status")
                return 0
            }
            break
        }
        precondition(buffer.count <= maxHead + 4 + maxBody + piece, "unparsed bytes beyond every limit")
    }
    return 0
}

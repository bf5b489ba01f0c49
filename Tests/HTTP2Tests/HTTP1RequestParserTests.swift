import Testing

@testable import HTTP2

@Suite struct HTTP1RequestParserTests {
    private func parse(_ text: String, maxBody: Int = 1024) -> (HTTP1RequestParser.Outcome, [UInt8]) {
        var buffer = Array(text.utf8)
        let outcome = HTTP1RequestParser.parse(&buffer, maxHeadBytes: 4096, maxBodyBytes: maxBody)
        return (outcome, buffer)
    }

    @Test func parsesARequestWithABodyAndLeavesTheNextOne() throws {
        let (outcome, rest) = parse(
            "POST /inApps/v1/notifications/history?paginationToken=a%2Bb HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                + "X-Thing:  spaced value \r\n\r\nbodyGET / HTTP/1.1\r\n\r\n")
        guard case .request(let request, let keepAlive) = outcome else {
            Issue.record("expected a request, got \(outcome)")
            return
        }
        #expect(request.method == "POST")
        #expect(request.path == "/inApps/v1/notifications/history")
        #expect(request.queryItems.map(\.value) == ["a+b"])
        #expect(request.header("x-thing") == "spaced value")
        #expect(request.body == Array("body".utf8))
        #expect(keepAlive)
        #expect(rest == Array("GET / HTTP/1.1\r\n\r\n".utf8))
    }

    @Test func waitsForTheWholeHeadAndBody() {
        guard case .incomplete = parse("GET / HTTP/1.1\r\nHost: x\r\n").0 else { Issue.record("head"); return }
        guard case .incomplete = parse("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc").0 else {
            Issue.record("body")
            return
        }
    }

    @Test func connectionCloseAndHTTP10() {
        if case .request(_, let keepAlive) = parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").0 {
            #expect(!keepAlive)
        }
        if case .request(_, let keepAlive) = parse("GET / HTTP/1.0\r\n\r\n").0 { #expect(!keepAlive) }
        if case .request(_, let keepAlive) = parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").0 {
            #expect(keepAlive)
        }
    }

    @Test(arguments: [
        ("GARBAGE\r\n\r\n", 400), ("GET nothing HTTP/1.1\r\n\r\n", 400), ("GET / SPDY/3\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400), ("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400), ("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nContent-Length: 2048\r\n\r\n", 413),
    ])
    func badRequestsGetTheirStatus(text: String, status: Int) {
        guard case .failure(let got, let reason) = parse(text).0 else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(got == status)
        #expect(!reason.isEmpty)
    }

    @Test(arguments: [
        ("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", 413),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nContent-Length: 8388608\r\n\r\n", 413),
    ])
    func withNoBodyAllowedEveryBodyIsRefusedAtItsHead(text: String, status: Int) {
        guard case .failure(let got, _) = parse(text, maxBody: 0).0 else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(got == status)
        if case .request = parse("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", maxBody: 0).0 {
        } else {
            Issue.record("an empty body must stay acceptable")
        }
    }

    @Test func anOversizedHeadIsRefusedBeforeItEnds() {
        var buffer = Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 5000)).utf8)
        guard case .failure(let status, _) = HTTP1RequestParser.parse(&buffer, maxHeadBytes: 4096, maxBodyBytes: 10)
        else {
            Issue.record("expected 431")
            return
        }
        #expect(status == 431)
    }
}

import Testing

@testable import HTTPServer

@Suite struct HTTP1RequestParserTests {
    private func parse(_ text: String, maxBody: Int = 1024) -> (HTTP1RequestParser.Outcome, [UInt8]) {
        parse(bytes: Array(text.utf8), maxBody: maxBody)
    }

    private func parse(bytes: [UInt8], maxBody: Int = 1024) -> (HTTP1RequestParser.Outcome, [UInt8]) {
        var buffer = bytes
        var parser = HTTP1RequestParser(maxHeadBytes: 4096, maxBodyBytes: maxBody)
        let outcome = parser.parse(&buffer)
        return (outcome, buffer)
    }

    @Test func parsesARequestWithABodyAndLeavesTheNextOne() throws {
        let (outcome, rest) = parse(
            "POST /inApps/v1/notifications/history?paginationToken=a%2Bb HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                + "X-Thing:  spaced value \r\n\r\nbodyGET / HTTP/1.1\r\nHost: x\r\n\r\n")
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
        #expect(rest == Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
    }

    @Test func waitsForTheWholeHeadAndBody() {
        guard case .incomplete = parse("GET / HTTP/1.1\r\nHost: x\r\n").0 else { Issue.record("head"); return }
        guard case .incomplete = parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc").0 else {
            Issue.record("body")
            return
        }
    }

    /// Bytes arriving one at a time make the same request as all at once: the head's end is found across
    /// calls (CR LF CR LF split anywhere) and the parsed head waits for its body.
    @Test func aRequestArrivingByteByByteIsTheSameRequest() throws {
        let text = Array("POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyzGET /next HTTP/1.1\r\n".utf8)
        var parser = HTTP1RequestParser(maxHeadBytes: 4096, maxBodyBytes: 16)
        var buffer: [UInt8] = []
        var found: HTTPRequest?
        for byte in text {
            buffer.append(byte)
            switch parser.parse(&buffer) {
            case .incomplete: continue
            case .request(let request, _): found = request
            case .failure(let status, let reason): Issue.record("refused: \(status) \(reason)")
            }
        }
        let request = try #require(found)
        #expect(request.target == "/a?b=c" && request.body == Array("xyz".utf8))
        #expect(buffer == Array("GET /next HTTP/1.1\r\n".utf8))
    }

    @Test func connectionOptionsDecideKeepAlive() {
        let cases: [(String, Bool)] = [
            ("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, CLOSE\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nHost: x\r\nConnection: closed\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", true),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
            // RFC 9110 §2.5: a later 1.x minor version is served as 1.1.
            ("GET / HTTP/1.2\r\nHost: x\r\n\r\n", true),
        ]
        for (text, expected) in cases {
            guard case .request(_, let keepAlive) = parse(text).0 else {
                Issue.record("refused \(text.debugDescription)")
                continue
            }
            #expect(keepAlive == expected, "\(text.debugDescription)")
        }
    }

    @Test func anAbsoluteFormTargetIsServedAsItsPathWithItsAuthorityAsHost() throws {
        guard case .request(let request, _) = parse("GET http://Example.com:80?q=1 HTTP/1.1\r\nHost: other\r\n\r\n").0
        else {
            Issue.record("absolute-form refused")
            return
        }
        #expect(request.target == "/?q=1")
        #expect(request.headers.filter { $0.name == "host" }.map(\.value) == ["Example.com:80"])
    }

    @Test func oneLeadingEmptyLineIsIgnoredAndLeadingZerosAreALength() {
        guard case .request(let request, _) = parse("\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 002\r\n\r\nok").0
        else {
            Issue.record("refused")
            return
        }
        #expect(request.body == Array("ok".utf8))
    }

    @Test func fieldValuesMayCarryObsText() {
        guard
            case .request(let request, _) = parse(
                bytes: Array("GET / HTTP/1.1\r\nHost: x\r\nX-Name: caf".utf8) + [0xC3, 0xA9] + Array("\r\n\r\n".utf8)
            ).0
        else {
            Issue.record("refused")
            return
        }
        #expect(request.header("x-name") == "café")
    }

    /// Every shape two parsers could frame differently (request smuggling, RFC 9112 §6.3 and §11.2), every
    /// malformed line, and what this server does not take: each is refused, with a fixed reason.
    @Test(arguments: [
        // Content-Length: digits only, one field only (even two equal ones), never with Transfer-Encoding.
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 0\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        // Transfer-Encoding alone: chunked request bodies are not supported.
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999999\r\n\r\n", 413),
        // Line endings and folding.
        ("POST / HTTP/1.1\r\nHost: x\r\nX: a\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", 400),
        ("GET / HTTP/1.1\nHost: x\n\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\rContent-Length: 3\r\n\r\nabc", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400),
        // Field names are tokens, right against their colon; values hold no control character.
        ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\n: x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX(y): 1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{0}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{7F}b\r\n\r\n", 400),
        // Host: exactly one in HTTP/1.1, a plain authority.
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        // The request line: token method, one SP each, origin- or absolute-form target, HTTP/d.d.
        ("GARBAGE\r\n\r\n", 400),
        ("GET nothing HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / SPDY/3\r\nHost: x\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400),
        ("GET /\tx HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / http/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / HTTP/1.10\r\nHost: x\r\n\r\n", 400),
        ("GET / HTTP/11\r\nHost: x\r\n\r\n", 400),
        ("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET http://user@example.com/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET http:///path HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ])
    func badRequestsGetTheirStatus(text: String, status: Int) {
        guard case .failure(let got, let reason) = parse(text).0 else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(got == status, "\(text.debugDescription)")
        #expect(!reason.isEmpty)
        // The reason is the parser's own text: no byte of the request in it.
        #expect(!reason.contains("chunked\r") && !reason.contains("Host") && !reason.contains("GARBAGE"))
    }

    /// A bare LF is refused as soon as it arrives, not when a head ending never comes.
    @Test func aBareLFIsRefusedBeforeTheHeadEnds() {
        guard case .failure(400, _) = parse("GET / HTTP/1.1\r\nHost: x\nX-Still: coming").0 else {
            Issue.record("a bare LF waited for the rest of the head")
            return
        }
    }

    @Test(arguments: [
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", 413),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n", 413),
    ])
    func withNoBodyAllowedEveryBodyIsRefusedAtItsHead(text: String, status: Int) {
        guard case .failure(let got, _) = parse(text, maxBody: 0).0 else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(got == status)
        if case .request = parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", maxBody: 0).0 {
        } else {
            Issue.record("an empty body must stay acceptable")
        }
    }

    @Test func anOversizedHeadIsRefusedBeforeItEndsAndWhenItArrivesWhole() {
        var parser = HTTP1RequestParser(maxHeadBytes: 4096, maxBodyBytes: 10)
        var buffer = Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 5000)).utf8)
        guard case .failure(431, _) = parser.parse(&buffer) else {
            Issue.record("expected 431 before the end")
            return
        }
        var whole = HTTP1RequestParser(maxHeadBytes: 4096, maxBodyBytes: 10)
        buffer = Array(("GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 5000) + "\r\n\r\n").utf8)
        guard case .failure(431, _) = whole.parse(&buffer) else {
            Issue.record("expected 431 for a whole head")
            return
        }
    }
}

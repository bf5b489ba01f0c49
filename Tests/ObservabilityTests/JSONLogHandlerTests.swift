import Foundation
import GatewayFoundation
import Logging
import Testing

@testable import Observability

/// Collects the lines a handler writes.
private final class LineSink: Sendable {
    private let lines = Lock<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }
}

@Suite struct JSONLogHandlerTests {
    // 2026-11-22T05:54:27.123Z
    let clock = ManualClock(wall: WallTime(millisecondsSince1970: 1_795_326_867_123))

    private func logger(level: Logger.Level = .info, sink: LineSink) -> Logger {
        let clock = self.clock
        return Logger(label: "test.label") { label in
            JSONLogHandler(label: label, logLevel: level, clock: clock, write: { sink.append($0) })
        }
    }

    private func parse(_ line: String) throws -> [String: Any] {
        #expect(line.hasSuffix("\n"))
        #expect(line.dropLast().firstIndex(of: "\n") == nil, "one object per line")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any])
    }

    @Test func writesOneParseableObjectPerLine() throws {
        let sink = LineSink()
        var log = logger(sink: sink)
        log[metadataKey: "app"] = "example"
        log.info("serving", metadata: ["address": "0.0.0.0:50051", "request": ["id": "r-1", "attempt": "2"]])
        log.warning("second")
        #expect(sink.all.count == 2)
        let first = try parse(sink.all[0])
        #expect(first["timestamp"] as? String == "2026-11-22T05:54:27.123Z")
        #expect(first["level"] as? String == "info")
        #expect(first["label"] as? String == "test.label")
        #expect(first["message"] as? String == "serving")
        #expect(first["source"] as? String == "ObservabilityTests")
        #expect(first["app"] as? String == "example")
        #expect(first["address"] as? String == "0.0.0.0:50051")
        #expect(first["request.id"] as? String == "r-1")
        #expect(first["request.attempt"] as? String == "2")
        #expect(try parse(sink.all[1])["level"] as? String == "warning")
        #expect(sink.all[0].hasPrefix("{\"timestamp\":\"2026-11-22T05:54:27.123Z\",\"level\":\"info\""))
    }

    @Test func levelFiltersEvents() {
        let sink = LineSink()
        let log = logger(level: .warning, sink: sink)
        log.info("dropped")
        log.debug("dropped")
        log.error("kept")
        #expect(sink.all.count == 1)
        #expect(JSONLogHandler.level(named: "notice") == .notice)
        #expect(JSONLogHandler.level(named: "loud") == nil)
    }

    @Test func stringsAreEscaped() throws {
        let sink = LineSink()
        let tricky = "quote \" backslash \\ newline \n tab \t cr \r bell \u{07} nul \u{00} unicode é 🚀 \u{2028}"
        logger(sink: sink).info("\(tricky)", metadata: ["k\"ey": "\(tricky)", "list": ["a", "\n"]])
        let line = try #require(sink.all.first)
        #expect(line.contains("\\u0007") && line.contains("\\u0000") && line.contains("\\\""))
        let object = try parse(line)
        #expect(object["message"] as? String == tricky)
        #expect(object["k\"ey"] as? String == tricky)
        #expect(object["list"] as? [String] == ["a", "\n"])
    }

    @Test func secretLookingKeysAreRedacted() throws {
        let sink = LineSink()
        logger(sink: sink).info(
            "calling Apple",
            metadata: [
                "authorization": "Bearer eyJ.secret.sig",
                "privateKey": "-----BEGIN PRIVATE KEY-----",
                "resume_token": "abc",
                "apple.jwt": "eyJ",
                "p8": "MIGT",
                "upstream": ["Authorization": "Bearer x", "status": "200"],
                "key_id": "ABCDEFGHIJ",
            ])
        let line = try #require(sink.all.first)
        #expect(!line.contains("eyJ") && !line.contains("BEGIN") && !line.contains("MIGT") && !line.contains("Bearer"))
        let object = try parse(line)
        for key in ["authorization", "privateKey", "resume_token", "apple.jwt", "p8", "upstream.Authorization"] {
            #expect(object[key] as? String == "[redacted]", "\(key)")
        }
        #expect(object["upstream.status"] as? String == "200")
        #expect(object["key_id"] as? String == "ABCDEFGHIJ")
    }

    @Test func metadataCannotOverwriteFixedFields() throws {
        let sink = LineSink()
        logger(sink: sink).info("real", metadata: ["message": "fake", "level": "fake"])
        let object = try parse(try #require(sink.all.first))
        #expect(object["message"] as? String == "real")
        #expect(object["metadata.message"] as? String == "fake")
        #expect(object["metadata.level"] as? String == "fake")
    }

    @Test func timestampsAreRFC3339UTCWithMilliseconds() {
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 951_782_400_005)) == "2000-02-29T00:00:00.005Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: -1)) == "1969-12-31T23:59:59.999Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 4_102_444_799_999)) == "2099-12-31T23:59:59.999Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 1_795_326_867_123)) == "2026-11-22T05:54:27.123Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 86_399_999)) == "1970-01-01T23:59:59.999Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: -86_400_001)) == "1969-12-30T23:59:59.999Z")
    }
}

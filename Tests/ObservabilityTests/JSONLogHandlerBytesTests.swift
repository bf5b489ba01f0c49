import GatewayFoundation
import Logging
import Testing

@testable import Observability

#if canImport(Glibc)
    import Glibc
#endif

/// The exact bytes the JSON handler writes: fixed fields first in a fixed order, then every metadata key
/// (handler, provider and call metadata merged, the later winning per top-level key) in key order, nested
/// dictionaries as dotted keys, secrets redacted, fixed names moved under `metadata.`.
@Suite struct JSONLogHandlerBytesTests {
    // 2026-11-22T05:54:27.123Z
    static let clock = ManualClock(wall: WallTime(millisecondsSince1970: 1_795_326_867_123))
    static let prefix = #"{"timestamp":"2026-11-22T05:54:27.123Z","#

    struct Failure: Error, CustomStringConvertible {
        var description: String { "upstream said \"no\"\n" }
    }

    /// The lines a logger with `handlerMetadata` and `provided` writes for each of `log`'s events.
    private func lines(
        handlerMetadata: Logger.Metadata = [:], provided: Logger.Metadata? = nil,
        _ log: (inout Logger) -> Void
    ) -> [String] {
        let sink = Lock<[String]>([])
        let provider = provided.map { metadata in Logger.MetadataProvider { metadata } }
        var logger = Logger(label: "test.bytes") { label in
            JSONLogHandler(
                label: label, logLevel: .trace, metadataProvider: provider, clock: Self.clock,
                write: { line in sink.withLock { $0.append(line) } })
        }
        for (key, value) in handlerMetadata { logger[metadataKey: key] = value }
        log(&logger)
        return sink.withLock { $0 }
    }

    @Test func aLineWithoutMetadataIsTheFixedFieldsInOrder() {
        let written = lines { $0.notice("plain") }
        #expect(
            written == [
                Self.prefix + #""level":"notice","label":"test.bytes","message":"plain","source":"ObservabilityTests"}"#
                    + "\n"
            ])
    }

    @Test func anErrorFollowsTheSourceEscaped() {
        let written = lines { $0.error("failed", error: Failure()) }
        #expect(
            written == [
                Self.prefix + #""level":"error","label":"test.bytes","message":"failed","source":"ObservabilityTests","#
                    + #""error":"upstream said \"no\"\n"}"# + "\n"
            ])
    }

    @Test func callMetadataIsSortedFlattenedAndTyped() {
        let written = lines {
            $0.warning(
                "Apple answered 429",
                metadata: [
                    "status": "429", "retry_after_ms": .stringConvertible(1500), "app": "example",
                    "ratio": .stringConvertible(0.25), "nan": .stringConvertible(Double.nan),
                    "upstream": ["host": "api.storekit.itunes.apple.com", "attempt": .stringConvertible(Int64(2))],
                    "list": [.string("a"), .dictionary(["z": "1", "k": ["x"]]), .array([]), .dictionary([:])],
                    "empty": .dictionary([:]),
                ])
        }
        #expect(
            written == [
                Self.prefix
                    + #""level":"warning","label":"test.bytes","message":"Apple answered 429","source":"ObservabilityTests","#
                    + #""app":"example","empty":{},"list":["a",{"k":["x"],"z":"1"},[],{}],"nan":"nan","ratio":0.25,"#
                    + #""retry_after_ms":1500,"status":"429","upstream.attempt":2,"#
                    + #""upstream.host":"api.storekit.itunes.apple.com"}"# + "\n"
            ])
    }

    @Test func handlerProviderAndCallMetadataMergeByTopLevelKeyTheLaterWinning() {
        let written = lines(
            handlerMetadata: [
                "app": "handler", "zone": ["a": "1", "b": ["c": "2"]], "region": "eu", "z_last": "handler",
                "private_key": "-----BEGIN", "only_handler": ["deep": "kept"],
            ],
            provided: ["trace_id": "t-1", "app": "provider", "region": ["id": "provider"]]
        ) {
            $0.info("first", metadata: ["zone": "flat", "b": "call"])
            $0.info("second")
        }
        let fixed = #""level":"info","label":"test.bytes","message":"#
        #expect(
            written == [
                Self.prefix + fixed + #""first","source":"ObservabilityTests","app":"provider","b":"call","#
                    + #""only_handler.deep":"kept","private_key":"[redacted]","region.id":"provider","#
                    + #""trace_id":"t-1","z_last":"handler","zone":"flat"}"# + "\n",
                Self.prefix + fixed + #""second","source":"ObservabilityTests","app":"provider","#
                    + #""only_handler.deep":"kept","private_key":"[redacted]","region.id":"provider","#
                    + #""trace_id":"t-1","z_last":"handler","zone.a":"1","zone.b.c":"2"}"# + "\n",
            ])
    }

    @Test func handlerMetadataChangesAreSeenByTheNextLine() {
        let written = lines(handlerMetadata: ["a": "1", "b": "2"]) { logger in
            logger.info("one")
            logger[metadataKey: "a"] = nil
            logger[metadataKey: "c"] = ["token": "secret", "d": "3"]
            logger.info("two")
            logger.handler.metadata = ["only": "this"]
            logger.info("three", metadata: ["call": "x"])
        }
        let fixed = #""level":"info","label":"test.bytes","message":"#
        #expect(
            written == [
                Self.prefix + fixed + #""one","source":"ObservabilityTests","a":"1","b":"2"}"# + "\n",
                Self.prefix + fixed + #""two","source":"ObservabilityTests","b":"2","c.d":"3","c.token":"[redacted]"}"#
                    + "\n",
                Self.prefix + fixed + #""three","source":"ObservabilityTests","call":"x","only":"this"}"# + "\n",
            ])
    }

    @Test func fixedNamesSortWhereTheyAreAndMoveUnderMetadata() {
        let written = lines(handlerMetadata: ["label": "h"]) {
            $0.info("real", metadata: ["message": "fake", "a": "1", "source": "s", "error": "e", "timestampz": "t"])
        }
        #expect(
            written == [
                Self.prefix + #""level":"info","label":"test.bytes","message":"real","source":"ObservabilityTests","#
                    + #""a":"1","metadata.error":"e","metadata.label":"h","metadata.message":"fake","#
                    + #""metadata.source":"s","timestampz":"t"}"# + "\n"
            ])
    }

    @Test func secretKeysAreRedactedWhereverTheyAppear() {
        let written = lines(handlerMetadata: ["TO\u{212A}EN": "handler-secret", "jwt": ["a": "b"]]) {
            $0.info(
                "secrets",
                metadata: [
                    "日本token": "call-secret", "Authorization": "Bearer x", "upstream": ["p8Path": "/k.p8", "ok": "1"],
                    "list": [.dictionary(["resume-token": "r", "fine": "f"])],
                ])
        }
        #expect(
            written == [
                Self.prefix + #""level":"info","label":"test.bytes","message":"secrets","source":"ObservabilityTests","#
                    + #""Authorization":"[redacted]","TO\#u{212A}EN":"[redacted]","jwt":"[redacted]","#
                    + #""list":[{"fine":"f","resume-token":"[redacted]"}],"upstream.ok":"1","#
                    + #""upstream.p8Path":"[redacted]","日本token":"[redacted]"}"# + "\n"
            ])
    }

    @Test func keysValuesAndMessagesAreEscaped() {
        let written = lines(handlerMetadata: ["h\"k": "v\\"]) {
            $0.info("line\nbreak \u{01} é", metadata: ["tab\tkey": "nul\u{00}", "q": ["in\"ner": "\u{1F}"]])
        }
        #expect(
            written == [
                Self.prefix + #""level":"info","label":"test.bytes","message":"line\nbreak \u0001 é","#
                    + #""source":"ObservabilityTests","h\"k":"v\\","q.in\"ner":"\u001f","tab\tkey":"nul\u0000"}"#
                    + "\n"
            ])
    }

    /// Without `write`, the line's bytes are queued to the writer; a critical line returns only once the
    /// writer has written everything queued.
    @Test func linesAreQueuedToTheWriterAndACriticalLineWaitsForIt() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let writer = LogLineWriter(fd: fds[1])
        let logger = Logger(label: "test.bytes") { JSONLogHandler(label: $0, clock: Self.clock, writer: writer) }
        logger.info("queued", metadata: ["k": "v"])
        logger.critical("stopping")
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)  // both lines are in the pipe already: never wait for them
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fds[0], &buffer, buffer.count)
        #expect(
            String(decoding: buffer[..<max(count, 0)], as: UTF8.self)
                == Self.prefix
                + #""level":"info","label":"test.bytes","message":"queued","source":"ObservabilityTests","#
                + #""k":"v"}"# + "\n" + Self.prefix
                + #""level":"critical","label":"test.bytes","message":"stopping","source":"ObservabilityTests"}"# + "\n"
        )
    }

    /// A year outside RFC 3339's four digits is written as it is, the rest as usual.
    @Test func yearsOutsideFourDigitsAreWrittenAsTheyAre() {
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 253_402_300_800_000)) == "10000-01-01T00:00:00.000Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: 253_402_300_799_999)) == "9999-12-31T23:59:59.999Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: -62_167_219_200_000)) == "0000-01-01T00:00:00.000Z")
        #expect(JSONText.timestamp(WallTime(millisecondsSince1970: -62_167_219_200_001)) == "-1-12-31T23:59:59.999Z")
    }

    /// Integers are JSON numbers at both ends of their range; other numbers too; anything else a string.
    @Test func numbersAreWrittenAsNumbers() {
        let written = lines {
            $0.info(
                "numbers",
                metadata: [
                    "a": .stringConvertible(0), "b": .stringConvertible(-42), "c": .stringConvertible(Int.min),
                    "d": .stringConvertible(Int.max), "e": .stringConvertible(UInt64.max),
                    "f": .stringConvertible(Int8(-8)),
                    "g": .stringConvertible(-0.5), "h": .stringConvertible(Float.infinity),
                    "i": .stringConvertible(true),
                ])
        }
        #expect(
            written == [
                Self.prefix + #""level":"info","label":"test.bytes","message":"numbers","source":"ObservabilityTests","#
                    + #""a":0,"b":-42,"c":-9223372036854775808,"d":9223372036854775807,"#
                    + #""e":18446744073709551615,"f":-8,"g":-0.5,"h":"inf","i":"true"}"# + "\n"
            ])
    }

    /// Each level writes its own name.
    @Test func everyLevelWritesItsName() {
        let written = lines { logger in
            for level in Logger.Level.allCases { logger.log(level: level, "m") }
        }
        #expect(
            written
                == Logger.Level.allCases.map { level in
                    Self.prefix + #""level":""# + level.rawValue + #"","label":"test.bytes","message":"m","#
                        + #""source":"ObservabilityTests"}"# + "\n"
                })
    }
}

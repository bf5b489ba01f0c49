import GatewayFoundation
import ProtoCodec
import Testing

@testable import GRPC

@Suite struct MessageFramingTests {
    private func frame(_ payload: [UInt8], flag: UInt8 = 0) -> [UInt8] {
        var bytes = [flag]
        let n = payload.count
        bytes += [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        return bytes + payload
    }

    private func feed(_ deframer: inout MessageDeframer, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { deframer.append($0) }
    }

    @Test func messagesSplitAtEveryByteBoundaryAreReassembled() throws {
        let stream = frame([1, 2, 3]) + frame([]) + frame(Array(repeating: 7, count: 300))
        for split in 0...stream.count {
            var deframer = MessageDeframer(maxMessageSize: 1024)
            var messages: [[UInt8]] = []
            feed(&deframer, Array(stream[..<split]))
            while let message = try deframer.next() { messages.append(message) }
            feed(&deframer, Array(stream[split...]))
            while let message = try deframer.next() { messages.append(message) }
            #expect(messages == [[1, 2, 3], [], Array(repeating: 7, count: 300)], "split at \(split)")
            #expect(deframer.isEmpty)
        }
    }

    /// A chunk holding exactly one message skips the buffer; order and limits hold as for any chunk.
    @Test func wholeMessagesInOneChunkEachKeepTheirOrderAndLimits() throws {
        var deframer = MessageDeframer(maxMessageSize: 4)
        feed(&deframer, frame([1, 2]))
        #expect(!deframer.isEmpty)
        feed(&deframer, frame([3]))  // before the first was taken
        feed(&deframer, frame([]))
        var messages: [[UInt8]] = []
        while let message = try deframer.next() { messages.append(message) }
        #expect(messages == [[1, 2], [3], []])
        #expect(deframer.isEmpty)
        feed(&deframer, frame([1, 2, 3, 4, 5]))  // whole, but over the limit
        #expect(throws: RPCStatus.self) { try deframer.next() }
    }

    @Test func partialMessageIsNotEmpty() throws {
        var deframer = MessageDeframer(maxMessageSize: 1024)
        feed(&deframer, Array(frame([1, 2, 3]).prefix(6)))
        #expect(try deframer.next() == nil)
        #expect(!deframer.isEmpty)
    }

    @Test func oversizedDeclaredLengthFailsBeforeThePayloadArrives() {
        var deframer = MessageDeframer(maxMessageSize: 10)
        feed(&deframer, [0, 0, 0, 0, 11])
        #expect(throws: RPCStatus.self) { try deframer.next() }
        do {
            _ = try deframer.next()
        } catch {
            #expect(error.code == .resourceExhausted)
            #expect(error.message.contains("11 bytes"))
        }
    }

    @Test func compressedFlagIsRefusedWithoutNegotiation() {
        var deframer = MessageDeframer(maxMessageSize: 10)
        feed(&deframer, frame([1], flag: 1))
        do {
            _ = try deframer.next()
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .unimplemented)
        }
    }

    @Test func invalidFlagIsAnError() {
        var deframer = MessageDeframer(maxMessageSize: 10)
        feed(&deframer, frame([1], flag: 2))
        do {
            _ = try deframer.next()
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .internal)
        }
    }

    @Test func aFramedMessageIsItsPrefixThenItsBytesAndTheDeframerReadsItBack() throws {
        let message = HealthCheckResponse.with { $0.status = .serving }
        let framed = FramedMessage(message)
        #expect(Array(framed.bytes.prefix(5)) == [0, 0, 0, 0, UInt8(message.serializedSize())])
        #expect(Array(framed.payload) == message.serializedBytes())
        var deframer = MessageDeframer(maxMessageSize: 100)
        feed(&deframer, framed.bytes)
        #expect(try deframer.next() == message.serializedBytes())
        // An empty message (every field at its default) is the prefix alone.
        #expect(FramedMessage(HealthCheckResponse()).bytes == [0, 0, 0, 0, 0])
    }

    @Test func aLongMessagesLengthIsWrittenBigEndian() throws {
        // A tag byte, a 3-byte varint length and 66,044 bytes of string: 0x010200 bytes of message.
        let message = HealthCheckRequest(service: String(repeating: "s", count: 66_044))
        let framed = FramedMessage(message)
        #expect(Array(framed.bytes.prefix(6)) == [0, 0, 1, 2, 0, 0x0A])
        #expect(framed.payload.count == 0x01_02_00)
        var deframer = MessageDeframer(maxMessageSize: 0x01_02_00)
        feed(&deframer, framed.bytes)
        #expect(try deframer.next() == message.serializedBytes())
    }
}

@Suite struct TimeoutTests {
    @Test(arguments: [
        ("1H", Duration.seconds(3_600)), ("2M", .seconds(120)), ("3S", .seconds(3)), ("4m", .milliseconds(4)),
        ("5u", .microseconds(5)), ("6n", .nanoseconds(6)), ("99999999S", .seconds(99_999_999)), ("0m", .zero),
        ("00000001n", .nanoseconds(1)),
    ])
    func parsesEveryUnit(text: String, timeout: Duration) throws {
        #expect(try GRPCTimeout.parse(text) == timeout)
    }

    @Test func theLargestTimeoutIsExactAndItsDeadlineSaturates() throws {
        let largest = try GRPCTimeout.parse("99999999H")
        #expect(largest == .seconds(99_999_999 * 3_600))  // 11,400 years: past what an Int64 of nanoseconds holds
        #expect(MonotonicInstant(nanoseconds: 1) + largest == MonotonicInstant(nanoseconds: .max))
    }

    @Test(arguments: ["", "S", "1", "1s", "123456789S", "-1S", "1.5S", " 1S", "1 S", "1SS", "１S"])
    func rejectsMalformed(text: String) {
        do {
            _ = try GRPCTimeout.parse(text)
            Issue.record("accepted '\(text)'")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("grpc-timeout"))
        }
    }
}

@Suite struct StatusEncodingTests {
    @Test func plainMessagesAreUnchanged() {
        #expect(StatusMessageEncoding.encode("unknown method /a.B/C") == "unknown method /a.B/C")
    }

    @Test func percentControlAndNonASCIIAreEncoded() {
        #expect(StatusMessageEncoding.encode("100% done\n") == "100%25 done%0A")
        #expect(StatusMessageEncoding.encode("café") == "caf%C3%A9")
    }

    @Test func decodeRoundTripsAndKeepsMalformedSequences() {
        for text in ["a%b", "ünïcødé ✓", "%", "%%41", "50%", "\r\n\t"] {
            #expect(StatusMessageEncoding.decode(StatusMessageEncoding.encode(text)) == text)
        }
        #expect(StatusMessageEncoding.decode("%zz%4") == "%zz%4")
    }

    @Test func trailersCarryStatusMessageAndDetails() throws {
        let status = RPCStatus(
            .resourceExhausted, "rate limit",
            details: ErrorDetails(
                info: .init(reason: "RATE_LIMIT_EXCEEDED", domain: "example.test", metadata: ["app": "x"]),
                retryDelayMilliseconds: 1500))
        let fields = StatusTrailers.fields(for: status)
        #expect(fields[0].name == "grpc-status" && fields[0].value == "8")
        #expect(fields[1].name == "grpc-message" && fields[1].value == "rate limit")
        let details = try #require(fields.first { $0.name == "grpc-status-details-bin" })
        #expect(!details.value.hasSuffix("="))
        let bytes = try #require(Base64.decode(details.value, variant: .standardUnpadded))
        #expect(bytes == StatusDetailsEncoding.encode(status))
    }

    @Test func okHasNoMessageOrDetails() {
        let fields = StatusTrailers.fields(for: .ok)
        #expect(fields.count == 1 && fields[0].value == "0")
    }

    @Test func base64RoundTripsPaddedAndUnpadded() {
        for length in 0..<20 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64.decode(Base64.encode(bytes, variant: .standard), variant: .standard) == bytes)
            #expect(
                Base64.decode(Base64.encode(bytes, variant: .standardUnpadded), variant: .standardUnpadded) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8), variant: .standard) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8), variant: .standard) == "Zm8=")
        #expect(Base64.encode(Array("fo".utf8), variant: .standardUnpadded) == "Zm8")
        #expect(Base64.decode("Zm8=", variant: .standardUnpadded) == nil)  // one form per call
        #expect(Base64.decode("Zm9v!", variant: .standardUnpadded) == nil)
    }
}

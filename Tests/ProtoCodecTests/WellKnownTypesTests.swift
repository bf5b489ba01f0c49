import ProtoCodec
import Testing

@Suite struct WellKnownTypesTests {
    @Test(arguments: [0, 1, 999, 1000, 1_698_148_900_123, -1, -999, -1000, -1001] as [Int64])
    func timestampMillisecondsRoundTrip(milliseconds: Int64) {
        let timestamp = ProtoTimestamp(unixMilliseconds: milliseconds)
        #expect(timestamp.unixMilliseconds == milliseconds)
        #expect((0..<1_000_000_000).contains(timestamp.nanos))
    }

    @Test func timestampBeforeEpochBorrowsASecond() {
        #expect(ProtoTimestamp(unixMilliseconds: -1) == ProtoTimestamp(seconds: -1, nanos: 999_000_000))
    }

    @Test func durationFromMilliseconds() {
        #expect(ProtoDuration(milliseconds: 1500) == ProtoDuration(seconds: 1, nanos: 500_000_000))
        #expect(ProtoDuration(milliseconds: -1500) == ProtoDuration(seconds: -1, nanos: -500_000_000))
        #expect(ProtoDuration(milliseconds: 1500).milliseconds == 1500)
        #expect(ProtoDuration(.milliseconds(2250)) == ProtoDuration(milliseconds: 2250))
    }

    @Test func enumsMapNamesAndNumbers() {
        #expect(Environment(rawValue: 2) == .sandbox)
        #expect(Environment.localTesting.rawValue == 4)
        #expect(Environment(rawValue: 77) == .unrecognized(77))
        #expect(Environment.unrecognized(2) == .sandbox)
        #expect(NotificationType.allCases.count == 24)
        #expect(NotificationSubtype.allCases.count == 20)
        #expect(HealthCheckResponse.ServingStatus.allCases == [.unknown, .serving, .notServing, .serviceUnknown])
        #expect(Transaction().type == .unspecified)
    }
}

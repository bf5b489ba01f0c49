import Testing

@testable import NotificationStore

/// Event ids are lowercase version-4 UUIDs (RFC 9562: version nibble 4, variant bits 10), never repeated.
@Suite struct SubscriptionEventIDsTests {
    @Test func idsAreDistinctLowercaseVersion4UUIDs() {
        let ids = (0..<2_000).map { _ in SubscriptionEventIDs.random() }
        #expect(Set(ids).count == ids.count)
        let hex = Set("0123456789abcdef")
        for id in ids {
            let groups = id.split(separator: "-", omittingEmptySubsequences: false)
            #expect(groups.map(\.count) == [8, 4, 4, 4, 12], "\(id)")
            #expect(groups.allSatisfy { $0.allSatisfy(hex.contains) }, "\(id)")
            #expect(groups[2].first == "4", "\(id)")
            #expect(groups.count == 5 && "89ab".contains(groups[3].first ?? "x"), "\(id)")
        }
        // Every nibble outside the fixed ones takes every value: the bytes are drawn, not patterned.
        for position in [0, 7, 15, 20, 35] {
            #expect(Set(ids.map { Array($0)[position] }).count == 16, "position \(position)")
        }
    }
}

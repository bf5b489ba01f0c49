import Testing

@testable import HTTPServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct AcceptBackoffTests {
    @Test func acceptsBelowTheCapAndPausesAtIt() {
        #expect(AcceptBackoff.beforeAccept(openConnections: 7, maxConnections: 8) == .accept)
        #expect(
            AcceptBackoff.beforeAccept(openConnections: 8, maxConnections: 8)
                == .pause(AcceptBackoff.retryDelay))
        #expect(AcceptBackoff.beforeAccept(openConnections: 9, maxConnections: 8) != .accept)
    }

    @Test func pendingHandshakesHaveTheirOwnCapAndNeverFillTheConnectionCap() {
        // Silent sockets in their handshake do not count against maxConnections, at any number below their cap.
        #expect(
            AcceptBackoff.beforeAccept(
                openConnections: 2, maxConnections: 3, pendingHandshakes: 1_023, maxPendingHandshakes: 1_024)
                == .accept)
        #expect(
            AcceptBackoff.beforeAccept(
                openConnections: 0, maxConnections: 3, pendingHandshakes: 1_024, maxPendingHandshakes: 1_024)
                == .pause(AcceptBackoff.retryDelay))
        #expect(
            AcceptBackoff.beforeAccept(
                openConnections: 3, maxConnections: 3, pendingHandshakes: 0, maxPendingHandshakes: 1_024)
                == .pause(AcceptBackoff.retryDelay))
        #expect(
            AcceptBackoff.beforeAccept(
                openConnections: 0, maxConnections: 3, pendingHandshakes: 1_000_000, maxPendingHandshakes: 0)
                == .accept)
    }

    @Test func noCapMeansAlwaysAccept() {
        #expect(AcceptBackoff.beforeAccept(openConnections: 1_000_000, maxConnections: 0) == .accept)
    }

    @Test func outOfDescriptorsPausesTheListener() {
        for errno in [EMFILE, ENFILE, ENOBUFS, ENOMEM] {
            guard case .pause(let delay) = AcceptBackoff.afterAcceptFailure(errno: errno) else {
                Issue.record("errno \(errno) must pause the listener")
                continue
            }
            #expect(delay > .zero)
        }
    }

    @Test func theSoftDescriptorLimitIsRaisedToTheHardOne() {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #expect(getrlimit(resource, &limit) == 0)
        #expect(raiseFileDescriptorLimit() == UInt64(limit.rlim_max))
    }
}

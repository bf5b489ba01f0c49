import GatewayFoundation
import Metrics
import Postgres
import Synchronization
import TestSupport
import Testing

/// A server that crashes and comes back, one of its own per test: calls in flight and calls issued while it is
/// down fail typed, and the same connection object is back within a second or two of the server's return.
@Suite(.serialized, .enabled(if: PostgresProcess.available, "PostgreSQL's server programs are not installed"))
struct PostgresReconnectTests {
    @Test func aCrashedServerIsReconnectedToWhenItReturns() async throws {
        let server = try await PostgresProcess.launch()
        let loop = try TestLoop()
        defer { loop.stop() }
        let registry = MetricsRegistry()
        let events = Shared<[String]>([])
        let connection = try await PostgresConnection.connect(
            try PostgresConfiguration(server.uri), on: loop.loop, metrics: PostgresMetrics(registry: registry)
        ) { event in
            events.withLock { $0.append("\(event)") }
        }
        try await connection.prepare("plus_one", "SELECT $1::int8 + 1")
        let events0 = try await connection.listen("wake")
        let inFlight = Task { try await connection.query("SELECT pg_sleep(30)") }
        try await Task.sleep(for: .milliseconds(200))

        try await server.stop(immediately: true)
        let lost = await failure { try await inFlight.value }
        #expect(lost?.kind == .connectionLost, "\(String(describing: lost))")
        let whileDown = await failure { try await connection.query("SELECT 1") }
        #expect(
            whileDown?.kind == .notConnected || whileDown?.kind == .connectionLost, "\(String(describing: whileDown))")
        #expect(await connection.isConnected() == false)
        // Down for a while: the attempts back off, and every call meanwhile fails at once.
        try await Task.sleep(for: .milliseconds(1500))
        let start = MonotonicInstant.now()
        #expect(await failureKind { try await connection.query("SELECT 1") } == .notConnected)
        #expect(seconds(since: start) < 0.1)

        try await server.start()
        let back = MonotonicInstant.now()
        var answer: Int64?
        while answer == nil, seconds(since: back) < 5 {
            answer = try? await connection.query("SELECT 41 + 1")[0][0].int()
            if answer == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(answer == 42)
        #expect(seconds(since: back) < 2, "reconnected \(seconds(since: back)) s after the server's return")
        // The same object, its prepared statement prepared again and its subscription renewed.
        #expect(try await connection.execute(prepared: "plus_one", [1])[0][0].int() == 2)
        var iterator = events0.makeAsyncIterator()
        #expect(await iterator.next() == .resubscribed)
        _ = try await connection.query("NOTIFY wake, 'again'")
        if case .notification(let notification)? = await iterator.next() {
            #expect(notification.payload == "again")
        } else {
            Issue.record("no notification after the reconnect")
        }
        let statistics = await connection.statistics()
        #expect(statistics.connects == 2)
        #expect(statistics.losses == 1)
        let losses = registry.counter("appstore_gateway_postgres_connections_lost_total", help: "")
        #expect(losses.labels().current == 1)
        #expect(events.withLock { $0.contains { $0.hasPrefix("lost") } })
        #expect(events.withLock { $0.contains { $0.hasPrefix("attemptFailed") } })
        #expect(events.withLock { $0.last } == "connected(reconnect: true)")
        await connection.close()
    }
}

/// Passwords and connection strings: a password server (SCRAM) accepts the right password, refuses a wrong one
/// with a typed error, and no description or error shows the password; strings libpq cannot parse are typed
/// errors too.
@Suite(.serialized)
struct PostgresConnectionStringTests {
    @Test(.enabled(if: PostgresProcess.available, "PostgreSQL's server programs are not installed"))
    func aPasswordServerAcceptsOnlyItsPassword() async throws {
        let server = try await PostgresProcess.launch(password: "p@ss:w0rd/ok")
        let loop = try TestLoop()
        defer { loop.stop() }
        let good = "postgresql://postgres:p%40ss%3Aw0rd%2Fok@127.0.0.1:\(server.port)/postgres"
        let configuration = try PostgresConfiguration(good)
        #expect(!configuration.description.contains("p@ss"))
        #expect(!configuration.description.contains("w0rd"))
        #expect(configuration.description.contains("password=***"))
        let connection = try await PostgresConnection.connect(configuration, on: loop.loop)
        #expect(try await connection.query("SELECT current_user")[0][0].string() == "postgres")
        await connection.close()

        let wrong = try PostgresConfiguration("postgresql://postgres:guess@127.0.0.1:\(server.port)/postgres")
        let refused = await failure { try await PostgresConnection.connect(wrong, on: loop.loop) }
        #expect(refused?.kind == .refused)
        #expect(refused?.message.contains("password") == true, "\(String(describing: refused))")
        #expect(refused?.message.contains("guess") == false)
    }

    @Test(.enabled(if: PostgresProcess.available, "PostgreSQL's server programs are not installed"))
    func tlsVerifiesTheServerAgainstTheGivenRoot() async throws {
        let pki = try RedisTLSFixture(serverNames: ["localhost"])
        let server = try await PostgresProcess.launch(
            tlsCertificate: pki.serverCertificateFile, tlsKey: pki.serverKeyFile)
        let loop = try TestLoop()
        defer { loop.stop() }
        // The host is a name: resolved off the loop, connected to by address, verified by name.
        let verified = try PostgresConfiguration(
            "postgresql://postgres@localhost:\(server.port)/postgres?sslmode=verify-full&sslrootcert=\(pki.caFile)")
        let connection = try await PostgresConnection.connect(verified, on: loop.loop)
        let ssl = try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        #expect(try ssl[0][0].bool() == true)
        await connection.close()
        // Another root does not vouch for the server; a name the certificate lacks does not match.
        let untrusted = try PostgresConfiguration(
            "postgresql://postgres@localhost:\(server.port)/postgres?sslmode=verify-full&sslrootcert=\(pki.otherCAFile)"
        )
        #expect(await failureKind { try await PostgresConnection.connect(untrusted, on: loop.loop) } == .refused)
        let misnamed = try PostgresConfiguration(
            "host=127.0.0.1 port=\(server.port) user=postgres sslmode=verify-full sslrootcert=\(pki.caFile)")
        let mismatch = await failure { try await PostgresConnection.connect(misnamed, on: loop.loop) }
        #expect(mismatch?.kind == .refused)
        #expect(mismatch?.message.contains("127.0.0.1") == true, "\(String(describing: mismatch))")
    }

    @Test func badConnectionStringsAreTypedErrors() async throws {
        for text in [
            "nosuchoption=1", "host='unterminated", "postgresql://u:s%zzecret@host/db", "postgresql://[::1/db",
            "postgresql://host/db?nosuchparameter=1",
        ] {
            let error = await failure { try PostgresConfiguration(text) }
            #expect(error?.kind == .invalidURI, "\(text)")
            #expect(error?.message.contains("zzecret") != true, "\(String(describing: error))")
        }
        let configuration = try PostgresConfiguration(
            "host=db.example port=5432 password='it\\'s secret' sslmode=require")
        #expect(!configuration.description.contains("secret"))
    }

    @Test func nothingListeningIsRefused() async throws {
        let loop = try TestLoop()
        defer { loop.stop() }
        let port = try RedisProcess.freePort()
        let configuration = try PostgresConfiguration("postgresql://postgres@127.0.0.1:\(port)/postgres")
        #expect(await failureKind { try await PostgresConnection.connect(configuration, on: loop.loop) } == .refused)
        let unknown = try PostgresConfiguration("postgresql://postgres@no-such-host.invalid:5432/postgres")
        #expect(await failureKind { try await PostgresConnection.connect(unknown, on: loop.loop) } == .refused)
    }

    @Test func aLoopThatStopsAnswersTheCallerWaitingToConnect() async throws {
        let loop = try TestLoop()
        defer { loop.stop() }
        // A port that takes connections and never answers: the attempt waits for the server's first byte.
        let silent = try SilentListener()
        var configuration = try PostgresConfiguration(
            "postgresql://postgres@127.0.0.1:\(silent.port)/postgres?sslmode=disable")
        configuration.connectTimeout = .seconds(120)
        let connecting = Task { try await PostgresConnection.connect(configuration, on: loop.loop) }
        try await Task.sleep(for: .milliseconds(200))
        let start = MonotonicInstant.now()
        loop.stop()
        let error = await failure { try await connecting.value }
        #expect(error?.kind == .closed, "\(String(describing: error))")
        #expect(error?.message == "the event loop stopped")
        // Answered by the stop, long before the attempt's own deadline.
        #expect(seconds(since: start) < 60)
    }

    @Test func aLoopThatStopsAnswersTheCallsInFlightAndEndsSubscriptions() async throws {
        let server = try await PostgresProcess.shared()
        let loop = try TestLoop()
        defer { loop.stop() }
        let connection = try await PostgresConnection.connect(try PostgresConfiguration(server.uri), on: loop.loop)
        let events = try await connection.listen("stopping")
        let inFlight = Task { try await connection.query("SELECT pg_sleep(30)") }
        try await Task.sleep(for: .milliseconds(200))
        loop.stop()
        let error = await failure { try await inFlight.value }
        #expect(error?.kind == .closed, "\(String(describing: error))")
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == nil)
        // Later calls fail at once: the loop takes no more work.
        #expect(await failureKind { try await connection.query("SELECT 1") } == .closed)
        await connection.close()
    }

    @Test func theBackoffDoublesUpToItsMaximum() {
        let backoff = PostgresBackoff()
        #expect(backoff.delay(afterFailures: 0) == .milliseconds(50))
        #expect(backoff.delay(afterFailures: 1) == .milliseconds(100))
        #expect(backoff.delay(afterFailures: 4) == .milliseconds(800))
        #expect(backoff.delay(afterFailures: 5) == .seconds(1))
        #expect(backoff.delay(afterFailures: 1000) == .seconds(1))
    }
}

import ProtoCodec
import Testing

@testable import GRPC

@Suite struct HealthServiceTests {
    private func check(_ service: HealthService, _ name: String) throws -> Result<HealthCheckResponse, RPCStatus> {
        guard case .unaryInline(let body)? = service.methods["/grpc.health.v1.Health/Check"] else {
            throw RPCStatus(.internal, "Check is not an inline unary method")
        }
        let context = ServerContext(method: "/grpc.health.v1.Health/Check", metadata: [], deadline: nil)
        switch body(HealthCheckRequest(service: name).serializedBytes(), context) {
        case .success(let framed):
            // Read back as a client's bytes would be: the prefix must announce exactly the message.
            var deframer = MessageDeframer(maxMessageSize: 100)
            framed.bytes.withUnsafeBytes { deframer.append($0) }
            let message = try #require(try deframer.next(), "a well-formed prefix")
            #expect(deframer.isEmpty && message == Array(framed.payload))
            return .success(try HealthCheckResponse(serializedBytes: message))
        case .failure(let status):
            return .failure(status)
        }
    }

    @Test func checkAnswersEachServicesStatusAsTheBoardChangesIt() throws {
        let board = HealthStatusBoard(services: ["a"])
        let service = HealthService(board: board)
        #expect(try check(service, "").get().status == .serving)
        board.set(.notServing, service: "a")
        #expect(try check(service, "a").get().status == .notServing)
        #expect(try check(service, "").get().status == .serving)
        board.set(.notServing)
        #expect(try check(service, "").get().status == .notServing)
        board.set(.serving)
        #expect(try check(service, "a").get().status == .serving)
        // The whole server's status ("") is its own: setting it leaves named services alone, and back.
        board.set(.notServing, service: "")
        #expect(try check(service, "").get().status == .notServing)
        #expect(try check(service, "a").get().status == .serving)
        #expect(board.status(of: "") == .notServing && board.status(of: "b") == nil)
    }

    @Test func aStatusThisReleaseDoesNotKnowIsAnsweredWithItsNumber() throws {
        let board = HealthStatusBoard(services: ["a"])
        let service = HealthService(board: board)
        board.set(.unrecognized(7))
        #expect(try check(service, "").get().status.rawValue == 7)
        #expect(try check(service, "a").get().status.rawValue == 7)
        #expect(board.status(of: "") == .unrecognized(7))
    }

    /// Checks on several threads while the status flips: every answer is one of the statuses set (the
    /// whole server's status is read without the board's lock; ThreadSanitizer runs this too).
    @Test func checksDuringStatusChangesSeeOnlyStatusesThatWereSet() async throws {
        let board = HealthStatusBoard(services: [])
        let service = HealthService(board: board)
        let seen = try await withThrowingTaskGroup(of: Set<Int32>.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var seen = Set<Int32>()
                    for _ in 0..<2_000 { seen.insert(try check(service, "").get().status.rawValue) }
                    return seen
                }
            }
            group.addTask {
                for round in 0..<2_000 { board.set(round.isMultiple(of: 2) ? .notServing : .serving) }
                return []
            }
            return try await group.reduce(into: Set<Int32>()) { $0.formUnion($1) }
        }
        #expect(!seen.isEmpty && seen.isSubset(of: [1, 2]))
    }

    @Test func anUnknownServiceIsNotFoundWithItsNameClipped() throws {
        let service = HealthService(board: HealthStatusBoard(services: []))
        let long = String(repeating: "x", count: 10_000)
        guard case .failure(let status) = try check(service, long) else {
            Issue.record("an unknown service was answered")
            return
        }
        #expect(status.code == .notFound)
        #expect(status.message.utf8.count < 1_000)
    }
}

internal import CLibPQ
import GatewayFoundation
import Synchronization

typealias CallResult = Result<PostgresRows, PostgresError>

/// What one call asks the server for.
enum PostgresStatement: Sendable {
    case query(String, [PostgresValue?])
    /// `types`: the parameters' type OIDs (0 or missing: inferred by the server).
    case prepare(name: String, sql: String, types: [UInt32] = [])
    case executePrepared(name: String, [PostgresValue?])
}

/// A statement prepared under a name: its text and its parameters' declared types.
struct PreparedText: Hashable {
    var sql: String
    var types: [UInt32] = []
}

/// A call's side of the race with its caller's cancellation: set from the cancellation handler (any thread), read
/// on the loop when the call is submitted, so a cancellation that comes first is not missed.
final class CallTicket: Sendable {
    private let flag = Atomic<Bool>(false)
    var isCancelled: Bool { flag.load(ordering: .acquiring) }
    func cancel() { flag.store(true, ordering: .releasing) }
}

/// Where a call stands in a transaction.
enum TransactionRole: Sendable {
    /// Not part of one.
    case none
    /// `BEGIN`: makes its transaction the connection's, once sent.
    case begin(Int)
    /// A statement inside the transaction.
    case inside(Int)
    /// `COMMIT` or `ROLLBACK`: ends the transaction once sent.
    case end(Int)

    var transaction: Int? {
        switch self {
        case .none: nil
        case .begin(let id), .inside(let id), .end(let id): id
        }
    }
}

/// How the statements of a batch (`PostgresConnection.calls`) stand in transactions.
enum BatchRole: Sendable {
    /// Every statement has this role (statements of a caller's transaction).
    case each(TransactionRole)
    /// The statements are one transaction of their own: the first its BEGIN, the last its COMMIT.
    case wholeTransaction

    /// The role of statement `index` of `count`; `transaction` names a whole transaction's.
    func role(ofStatement index: Int, count: Int, transaction: Int) -> TransactionRole {
        switch self {
        case .each(let role): role
        case .wholeTransaction:
            index == 0 ? .begin(transaction) : index == count - 1 ? .end(transaction) : .inside(transaction)
        }
    }
}

/// One statement on its way through a connection, confined to the connection's loop: waiting (behind another
/// caller's transaction), then sent (its results arrive in order, then its pipeline sync), then answered once.
final class PendingCall {
    let statement: PostgresStatement
    let role: TransactionRole
    let ticket: CallTicket?
    /// Who waits for the answer: nil for the connection's own calls (a re-prepare, LISTEN after a reconnect),
    /// and once answered.
    private var respond: ((CallResult) -> Void)?
    /// What the connection does when the call succeeds (before the caller resumes).
    var onSuccess: (() -> Void)?
    var timer: IOLoopTimer?
    /// The call's rows so far.
    var builder: RowsBuilder
    /// The first error its results carried.
    var failure: PostgresError?
    /// Answered already (deadline, cancellation, bounds): its results are discarded as they arrive.
    var abandoned = false
    /// Ask the server to cancel it when it becomes the statement the server runs.
    var cancelWhenCurrent = false
    /// A prepare sent just before it (after a reconnect), whose error explains this call's.
    var preparation: PendingCall?

    /// A call answered through `respond` (one of a batch, or a call handed over), or nobody's (`respond` nil).
    init(
        _ statement: PostgresStatement, role: TransactionRole, limits: PostgresResultLimits, ticket: CallTicket?,
        respond: ((CallResult) -> Void)?
    ) {
        self.statement = statement
        self.role = role
        self.ticket = ticket
        self.respond = respond
        builder = RowsBuilder(limits: limits)
    }

    /// A call whose caller waits on `continuation` (nil for the connection's own calls).
    convenience init(
        _ statement: PostgresStatement, role: TransactionRole, limits: PostgresResultLimits, ticket: CallTicket?,
        continuation: CheckedContinuation<CallResult, Never>?
    ) {
        self.init(
            statement, role: role, limits: limits, ticket: ticket,
            respond: continuation.map { continuation in { continuation.resume(returning: $0) } })
    }

    /// Whether someone still waits for the answer.
    var isAnswered: Bool { respond == nil }

    /// How many times it was sent again (`handOver`): its plan had gone stale, or a cancel meant for another call
    /// hit it.
    private(set) var resends = 0
    /// When it was handed to libpq (for telling a stray cancel from one meant for it).
    var sentAt: MonotonicInstant?

    /// The same call, to be sent again, answering this call's caller (who is no longer this call's).
    func handOver() -> PendingCall? {
        guard let respond else { return nil }
        self.respond = nil
        abandoned = true
        let again = PendingCall(statement, role: role, limits: builder.limits, ticket: ticket, respond: respond)
        again.resends = resends + 1
        return again
    }

    /// Answers the caller (once; later answers are ignored) and marks the call abandoned.
    func answer(_ result: CallResult) {
        abandoned = true
        guard let respond else { return }
        self.respond = nil
        respond(result)
    }
}

/// The answers of a batch of calls (`PostgresConnection.calls`), collected on the connection's loop: the caller
/// resumes once every call of the batch is answered, with the answers in the batch's order.
final class BatchAnswers {
    private var results: [CallResult?]
    private var left: Int
    private var continuation: CheckedContinuation<[CallResult], Never>?

    init(count: Int, continuation: CheckedContinuation<[CallResult], Never>) {
        results = Array(repeating: nil, count: count)
        left = count
        self.continuation = continuation
    }

    func answer(_ index: Int, _ result: CallResult) {
        guard results[index] == nil else { return }
        results[index] = result
        left -= 1
        guard left == 0, let continuation else { return }
        self.continuation = nil
        continuation.resume(returning: results.map { $0 ?? .failure(PostgresError(.closed, "not answered")) })
    }
}

/// A result built row by row (libpq's single-row mode) within its limits.
struct RowsBuilder {
    let limits: PostgresResultLimits
    private(set) var columns: [PostgresColumn]?
    private var storage: [UInt8] = []
    private var starts: [Int] = []
    private var lengths: [Int32] = []
    private var rowCount = 0
    private var bytes = 0
    var commandTag = ""

    init(limits: PostgresResultLimits) { self.limits = limits }

    /// What a cell costs besides its text: its start and length.
    static let cellOverhead = MemoryLayout<Int>.size + MemoryLayout<Int32>.size

    /// Adds the rows of `result` (one in single-row mode); false when they pass a bound (nothing kept then).
    mutating func append(_ result: OpaquePointer) -> Bool {
        let fieldCount = Int(PQnfields(result))
        if columns == nil {
            columns = (0..<fieldCount).map { field in
                let name = PQfname(result, Int32(field)).map { String(cString: $0) } ?? ""
                return PostgresColumn(name: name, typeOID: UInt32(PQftype(result, Int32(field))))
            }
        }
        guard fieldCount == columns?.count else { return false }
        let tupleCount = Int(PQntuples(result))
        guard tupleCount <= limits.maxRows - rowCount else { return false }
        for row in 0..<tupleCount {
            var rowBytes = 0
            for field in 0..<fieldCount {
                rowBytes += Self.cellOverhead + Int(max(0, PQgetlength(result, Int32(row), Int32(field))))
            }
            guard rowBytes <= limits.maxBytes - bytes else { return false }
            bytes += rowBytes
            for field in 0..<fieldCount {
                if PQgetisnull(result, Int32(row), Int32(field)) != 0 {
                    starts.append(storage.count)
                    lengths.append(-1)
                    continue
                }
                let length = Int(max(0, PQgetlength(result, Int32(row), Int32(field))))
                starts.append(storage.count)
                lengths.append(Int32(length))
                if length > 0, let value = PQgetvalue(result, Int32(row), Int32(field)) {
                    value.withMemoryRebound(to: UInt8.self, capacity: length) {
                        storage.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                    }
                }
            }
            rowCount += 1
        }
        return true
    }

    func finish() -> PostgresRows {
        PostgresRows(
            columns: columns ?? [], commandTag: commandTag, storage: storage, starts: starts, lengths: lengths,
            count: rowCount)
    }
}

/// Builds libpq's parameter arrays for `parameters` (nil: SQL NULL) and calls `body` with them: the count, the
/// types, the values, their lengths and their formats, valid only during the call.
func withParameterArrays<R>(
    _ parameters: [PostgresValue?],
    _ body: (
        Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
        UnsafePointer<Int32>?
    ) -> R
) -> R {
    guard !parameters.isEmpty else { return body(0, nil, nil, nil, nil) }
    // Text values are C strings to libpq (it ignores their lengths): each is followed by a NUL.
    let encoded = parameters.map { value in value.map { $0.format == 0 ? $0.encoded + [0] : $0.encoded } }
    let total = encoded.reduce(0) { $0 + ($1?.count ?? 0) }
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, total))
    defer { buffer.deallocate() }
    var types: [Oid] = []
    var values: [UnsafePointer<CChar>?] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []
    var offset = 0
    for (value, bytes) in zip(parameters, encoded) {
        types.append(value?.typeOID ?? 0)
        formats.append(value?.format ?? 0)
        guard let bytes else {
            values.append(nil)
            lengths.append(0)
            continue
        }
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress {
                (buffer + offset).initialize(from: base.assumingMemoryBound(to: CChar.self), count: raw.count)
            }
        }
        values.append(UnsafePointer(buffer + offset))
        lengths.append(Int32(clamping: value?.format == 0 ? bytes.count - 1 : bytes.count))
        offset += bytes.count
    }
    return body(Int32(clamping: parameters.count), types, values, lengths, formats)
}

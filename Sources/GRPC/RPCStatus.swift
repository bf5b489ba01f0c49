/// A gRPC status code (grpc/grpc doc/statuscodes.md). The numeric values are the wire values.
public enum StatusCode: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ok = 0
    case cancelled = 1
    case unknown = 2
    case invalidArgument = 3
    case deadlineExceeded = 4
    case notFound = 5
    case alreadyExists = 6
    case permissionDenied = 7
    case resourceExhausted = 8
    case failedPrecondition = 9
    case aborted = 10
    case outOfRange = 11
    case unimplemented = 12
    case `internal` = 13
    case unavailable = 14
    case dataLoss = 15
    case unauthenticated = 16

    /// The canonical UPPER_SNAKE name, e.g. `DEADLINE_EXCEEDED`.
    public var description: String {
        switch self {
        case .ok: "OK"
        case .cancelled: "CANCELLED"
        case .unknown: "UNKNOWN"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .deadlineExceeded: "DEADLINE_EXCEEDED"
        case .notFound: "NOT_FOUND"
        case .alreadyExists: "ALREADY_EXISTS"
        case .permissionDenied: "PERMISSION_DENIED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .failedPrecondition: "FAILED_PRECONDITION"
        case .aborted: "ABORTED"
        case .outOfRange: "OUT_OF_RANGE"
        case .unimplemented: "UNIMPLEMENTED"
        case .internal: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        case .dataLoss: "DATA_LOSS"
        case .unauthenticated: "UNAUTHENTICATED"
        }
    }
}

/// Typed details attached to a non-OK status, sent as `grpc-status-details-bin` (google.rpc.Status).
public struct ErrorDetails: Sendable, Hashable {
    /// google.rpc.ErrorInfo: a stable UPPER_SNAKE `reason`, its `domain`, and context metadata.
    public struct Info: Sendable, Hashable {
        public var reason: String
        /// Who defines `reason` (the server's user names it, e.g. its service's error domain).
        public var domain: String
        public var metadata: [String: String]
        public init(reason: String, domain: String, metadata: [String: String] = [:]) {
            self.reason = reason
            self.domain = domain
            self.metadata = metadata
        }
    }
    /// ErrorInfo, when the cause has a stable name.
    public var info: Info?
    /// google.rpc.RetryInfo: how long to wait before retrying, in milliseconds.
    public var retryDelayMilliseconds: Int64?
    /// google.rpc.BadRequest: the request fields that are invalid (empty: none sent).
    public var fieldViolations: [FieldViolation] = []
    public init(info: Info? = nil, retryDelayMilliseconds: Int64? = nil, fieldViolations: [FieldViolation] = []) {
        self.info = info
        self.retryDelayMilliseconds = retryDelayMilliseconds
        self.fieldViolations = fieldViolations
    }
}

/// One invalid request field: its path in the request and why it is refused (google.rpc.BadRequest).
public struct FieldViolation: Sendable, Hashable {
    /// The field's path, e.g. `product_types` or `product_ids[3]`.
    public var field: String
    /// Why the value is refused.
    public var description: String
    public init(field: String, description: String) {
        self.field = field
        self.description = description
    }
}

/// An error that knows its gRPC status: what a handler throws or returns, so each layer's typed errors
/// reach the caller through one mapping (a server's own error types conform where they are defined).
public protocol RPCStatusConvertible: Error {
    /// The status the call ends with.
    var rpcStatus: RPCStatus { get }
}

/// The outcome of an RPC: a code, a message a person can act on, and optional typed details.
public struct RPCStatus: RPCStatusConvertible, Sendable, Hashable, CustomStringConvertible {
    public var code: StatusCode
    public var message: String
    public var details: ErrorDetails?

    public init(_ code: StatusCode, _ message: String = "", details: ErrorDetails? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    /// The OK status.
    public static let ok = RPCStatus(.ok)

    public var description: String { message.isEmpty ? "\(code)" : "\(code): \(message)" }

    /// Itself.
    public var rpcStatus: RPCStatus { self }
}

extension RPCStatus {
    /// The status with `value` under `key` in its ErrorInfo metadata (an ErrorInfo in `domain`, with the code's
    /// name as its reason, is added when there is none), e.g. the resume cursor of a stream that ended early.
    public func addingInfoMetadata(_ key: String, _ value: String, domain: String) -> RPCStatus {
        var copy = self
        var details = copy.details ?? ErrorDetails()
        var info = details.info ?? ErrorDetails.Info(reason: code.description, domain: domain)
        info.metadata[key] = value
        details.info = info
        copy.details = details
        return copy
    }
}

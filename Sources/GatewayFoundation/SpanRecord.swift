/// One span of a trace, as the gateway records it for export (OpenTelemetry's span data model): ids as
/// numbers, times in nanoseconds since the UNIX epoch, attributes and events in the order set.
///
/// Made by a `Tracer` (`span(of:)`, `childSpan(of:)`) only when the trace is sampled, so a call whose
/// trace is not recorded builds none of it.
public struct SpanRecord: Sendable, Equatable {
    /// Who the span speaks for (OpenTelemetry's SpanKind).
    public enum Kind: Int, Sendable {
        /// Work inside the gateway.
        case `internal` = 1
        /// A request the gateway serves (an RPC, a webhook delivery).
        case server = 2
        /// A request the gateway makes (to Apple, to Redis, to its store).
        case client = 3
    }

    /// An attribute value (OpenTelemetry's AnyValue, the scalar kinds).
    public enum Value: Sendable, Equatable {
        case string(String)
        case bool(Bool)
        case int(Int64)
        case double(Double)
    }

    /// A named value on a span or an event.
    public struct Attribute: Sendable, Equatable {
        public var key: String
        public var value: Value

        public init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// Something that happened at one moment of the span (e.g. a retry).
    public struct Event: Sendable, Equatable {
        public var name: String
        /// Nanoseconds since the UNIX epoch.
        public var timeUnixNanos: UInt64
        public var attributes: [Attribute]

        public init(name: String, timeUnixNanos: UInt64, attributes: [Attribute] = []) {
            self.name = name
            self.timeUnixNanos = timeUnixNanos
            self.attributes = attributes
        }
    }

    /// A span of another trace this one is related to (OpenTelemetry's Span.Link): for a request whose
    /// sender's trace context is not trusted as a parent, the sender's span.
    public struct Link: Sendable, Equatable {
        /// The linked span's trace id: most significant half, least significant half.
        public var traceIDHigh: UInt64
        public var traceIDLow: UInt64
        public var spanID: UInt64
        /// The linked span's W3C `tracestate`, when it came with one.
        public var traceState: String?
        /// The linked span's W3C trace flags (bit 0: sampled).
        public var traceFlags: UInt8
        /// Whether the linked span is another process's.
        public var isRemote: Bool

        public init(
            traceIDHigh: UInt64, traceIDLow: UInt64, spanID: UInt64, traceState: String?, traceFlags: UInt8,
            isRemote: Bool
        ) {
            self.traceIDHigh = traceIDHigh
            self.traceIDLow = traceIDLow
            self.spanID = spanID
            self.traceState = traceState
            self.traceFlags = traceFlags
            self.isRemote = isRemote
        }
    }

    /// How the span's work ended (OpenTelemetry's Status: unset unless the work failed).
    public enum Status: Sendable, Equatable {
        case unset
        case ok
        case error(String)
    }

    /// The trace id: most significant half, least significant half (never both zero).
    public var traceIDHigh: UInt64
    public var traceIDLow: UInt64
    /// This span's id (nonzero).
    public var spanID: UInt64
    /// The parent span's id; 0 for a root span.
    public var parentSpanID: UInt64
    /// Whether the parent is the caller's span (another process) rather than one of the gateway's.
    public var parentIsRemote: Bool
    /// The W3C trace flags of the trace (bit 0: sampled).
    public var traceFlags: UInt8
    public var name: String
    public var kind: Kind
    /// Nanoseconds since the UNIX epoch.
    public var startUnixNanos: UInt64
    public var endUnixNanos: UInt64
    public var attributes: [Attribute] = []
    public var events: [Event] = []
    /// Spans of other traces this one is related to.
    public var links: [Link] = []
    public var status = Status.unset

    /// A span of `trace` named `name`, started at `startUnixNanos` (not yet ended: `endUnixNanos` 0).
    public init(
        traceIDHigh: UInt64, traceIDLow: UInt64, spanID: UInt64, parentSpanID: UInt64, parentIsRemote: Bool,
        traceFlags: UInt8, name: String, kind: Kind, startUnixNanos: UInt64
    ) {
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.parentIsRemote = parentIsRemote
        self.traceFlags = traceFlags
        self.name = name
        self.kind = kind
        self.startUnixNanos = startUnixNanos
        endUnixNanos = 0
    }

    /// Sets attribute `key` (a later value of the same key replaces the earlier one).
    public mutating func set(_ key: String, _ value: Value) {
        if let index = attributes.firstIndex(where: { $0.key == key }) {
            attributes[index].value = value
        } else {
            attributes.append(Attribute(key, value))
        }
    }

    /// Sets the string attribute `key`.
    public mutating func set(_ key: String, _ value: String) { set(key, .string(value)) }

    /// Sets the integer attribute `key`.
    public mutating func set(_ key: String, _ value: Int) { set(key, .int(Int64(value))) }
}

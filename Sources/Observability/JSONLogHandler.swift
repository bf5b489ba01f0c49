import GatewayFoundation
import Logging

/// A swift-log handler writing one JSON object per line:
///
///     {"timestamp":"2026-11-22T05:54:27.123Z","level":"info","label":"appstore-gateway",
///      "message":"serving gRPC (h2c)","source":"AppStoreGatewayCLI","address":"0.0.0.0:50051"}
///
/// Metadata is flattened into the object: nested dictionaries become dotted keys (`request.id`), arrays
/// stay arrays, every leaf value is a string except integers and finite floating-point numbers logged as
/// `.stringConvertible`, which are JSON numbers. A metadata key equal to one of the fixed fields is written
/// as `metadata.<key>` instead. Values under secret-looking keys (see `SecretRedaction`) are replaced
/// by "[redacted]", nested values included.
public struct JSONLogHandler: LogHandler {
    /// Whether `key` is one of the fixed fields, which always come first and in this order (without hashing
    /// it, and comparing only keys of a fixed field's length: this runs for every key of every line).
    static func isFixedField(_ key: String) -> Bool {
        switch key.utf8.count {
        case 5: key == "level" || key == "label" || key == "error"
        case 6: key == "source"
        case 7: key == "message"
        case 9: key == "timestamp"
        default: false
        }
    }

    /// The logger's label.
    public let label: String
    /// Events below this level are dropped.
    public var logLevel: Logger.Level
    /// Metadata added to every event of this handler (rendered once here, when set, not per line).
    public var metadata: Logger.Metadata = [:] {
        didSet { rendered = RenderedMetadata(metadata, redaction: redaction) }
    }
    /// Contextual metadata (e.g. from task locals), merged between handler and event metadata.
    public var metadataProvider: Logger.MetadataProvider?

    private let redaction: SecretRedaction
    private let clock: any GatewayClock
    private let output: Output
    /// `metadata`, flattened, redacted and rendered.
    private var rendered = RenderedMetadata.empty
    /// For each level (at `index(of:)`): `","level":"<level>","label":<label>,"message":`, the bytes between
    /// the timestamp and the message, the same for every line of the level.
    private let levelAndLabel: [[UInt8]]

    /// Where lines go.
    private enum Output {
        case writer(LogLineWriter)
        case strings(@Sendable (String) -> Void)
    }

    /// A handler for `label`. Each line, newline included, goes to `write` if given, else to `writer`
    /// (default: `LogLineWriter.standardError`), which only queues it, so logging never makes a thread wait
    /// for the reader; a critical line (the process is about to end) waits for the writer to write it.
    /// `clock` stamps the events.
    public init(
        label: String,
        logLevel: Logger.Level = .info,
        redaction: SecretRedaction = SecretRedaction(),
        metadataProvider: Logger.MetadataProvider? = nil,
        clock: any GatewayClock = SystemClock(),
        writer: LogLineWriter = .standardError,
        write: (@Sendable (String) -> Void)? = nil
    ) {
        self.label = label
        self.logLevel = logLevel
        self.redaction = redaction
        self.metadataProvider = metadataProvider
        self.clock = clock
        output = write.map(Output.strings) ?? .writer(writer)
        var label = Array(#","label":"#.utf8)
        JSONString.append(self.label, to: &label)
        levelAndLabel = Logger.Level.allCases.sorted { Self.index(of: $0) < Self.index(of: $1) }.map { level in
            Array(#"","level":""#.utf8) + Array(level.rawValue.utf8) + [UInt8(ascii: "\"")] + label
                + Array(#","message":"#.utf8)
        }
    }

    /// The level named by the configuration's `logging.level` (trace … critical); nil for other text.
    public static func level(named name: String) -> Logger.Level? { Logger.Level(rawValue: name) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard event.level >= logLevel else { return }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        appendLine(for: event, to: &bytes)
        switch output {
        case .writer(let writer):
            bytes.withUnsafeBytes { writer.enqueue($0) }
            if event.level == .critical { writer.flush() }
        case .strings(let write):
            write(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// Appends the line for `event` as UTF-8 bytes: the fixed fields, then every metadata key in key order
    /// (the handler's, the provider's, the event's, merged by top-level key, the later winning), as if the
    /// three were merged into one dictionary, flattened and sorted; but the handler's are rendered once,
    /// and a line with no other metadata writes them as they are.
    func appendLine(for event: LogEvent, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"timestamp":""#.utf8)
        JSONText.appendTimestamp(clock.wallNow(), to: &out)
        out.append(contentsOf: levelAndLabel[Self.index(of: event.level)])
        JSONString.append(event.message.description, to: &out)
        out.append(contentsOf: #","source":"#.utf8)
        JSONString.append(event.source, to: &out)
        if let error = event.error {
            out.append(contentsOf: #","error":"#.utf8)
            JSONString.append(String(describing: error), to: &out)
        }

        let provided = metadataProvider?.get() ?? [:]
        let own = event.metadata ?? [:]
        if provided.isEmpty && own.isEmpty {
            out.append(contentsOf: rendered.all)
        } else {
            // Each member rendered where it falls (the event's, the provider's, the handler's not replaced),
            // then, unless they came in key order, put in key order.
            let membersStart = out.count
            var spans: [MemberSpan] = []
            spans.reserveCapacity(own.count + provided.count + rendered.members.count)
            for (key, value) in own { Self.appendMembers(key, value, redaction: redaction, to: &out, spans: &spans) }
            for (key, value) in provided where own[key] == nil {
                Self.appendMembers(key, value, redaction: redaction, to: &out, spans: &spans)
            }
            for member in rendered.members where own[member.topLevelKey] == nil && provided[member.topLevelKey] == nil {
                spans.append(MemberSpan(key: member.key, start: out.count, end: out.count + member.bytes.count))
                out.append(contentsOf: member.bytes)
            }
            if !spans.isSorted() {
                spans.sort { $0.key < $1.key }
                Self.reorder(&out, from: membersStart, by: spans)
            }
        }
        out.append(contentsOf: "}\n".utf8)
    }

    /// The index of `level` in `levelAndLabel`, without searching.
    private static func index(of level: Logger.Level) -> Int {
        switch level {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }

    /// Renders `value` under `key` (dotted after `prefix`) as members at the end of `out`, noting each one's
    /// span: a dictionary becomes one member per leaf, a secret key's whole value (nested or not) is redacted.
    fileprivate static func appendMembers(
        _ key: String, _ value: Logger.MetadataValue, prefix: String? = nil, redaction: SecretRedaction,
        to out: inout [UInt8], spans: inout [MemberSpan]
    ) {
        let path = prefix.map { "\($0).\(key)" } ?? key
        let secret = redaction.isSecret(key: key)
        if !secret, case .dictionary(let nested) = value, !nested.isEmpty {
            for (key, value) in nested {
                appendMembers(key, value, prefix: path, redaction: redaction, to: &out, spans: &spans)
            }
            return
        }
        let start = out.count
        if isFixedField(path) {
            // One of the fixed names: ASCII letters, nothing to escape.
            out.append(contentsOf: #","metadata."#.utf8)
            out.append(contentsOf: path.utf8)
            out.append(contentsOf: #"":"#.utf8)
        } else {
            out.append(UInt8(ascii: ","))
            JSONString.append(path, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        if secret {
            JSONString.append(SecretRedaction.replacement, to: &out)
        } else {
            appendValue(value, redaction: redaction, to: &out)
        }
        spans.append(MemberSpan(key: path, start: start, end: out.count))
    }

    /// Rewrites the members from `start` on (which `spans` cover, saying where each is) in the order of
    /// `spans`, in place.
    private static func reorder(_ out: inout [UInt8], from start: Int, by spans: [MemberSpan]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: out.count - start) { members in
            out.withUnsafeMutableBufferPointer { out in
                _ = members.initialize(fromContentsOf: out[start...])
                var next = start
                for span in spans {
                    let count = span.end - span.start
                    _ = out[next..<(next + count)].initialize(
                        fromContentsOf: members[(span.start - start)..<(span.end - start)])
                    next += count
                }
            }
        }
    }

    fileprivate static func appendValue(
        _ value: Logger.MetadataValue, redaction: SecretRedaction, to out: inout [UInt8]
    ) {
        switch value {
        case .string(let text):
            JSONString.append(text, to: &out)
        case .stringConvertible(let convertible):
            // Durations and counts stay numbers, so log queries can compare and sum them.
            if !JSONText.appendNumber(convertible, to: &out) {
                JSONString.append(convertible.description, to: &out)
            }
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(element, redaction: redaction, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let nested):
            // Only reached for dictionaries inside arrays (top-level ones are flattened).
            out.append(UInt8(ascii: "{"))
            for (index, key) in nested.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONString.append(key, to: &out)
                out.append(UInt8(ascii: ":"))
                if redaction.isSecret(key: key) {
                    JSONString.append(SecretRedaction.replacement, to: &out)
                } else if let inner = nested[key] {
                    appendValue(inner, redaction: redaction, to: &out)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

/// A handler's own metadata, flattened, redacted and rendered as JSON members in key order: what every
/// line of the handler carries, built when the metadata is set instead of for each line.
private struct RenderedMetadata {
    struct Member {
        /// The flattened key (`request.id`), which orders the members.
        var key: String
        /// The key in the handler's metadata it comes from (`request`): a provider's or an event's value for
        /// that key replaces the member.
        var topLevelKey: String
        /// `,"key":value`.
        var bytes: [UInt8]
    }

    static let empty = RenderedMetadata(members: [], all: [])

    /// In key order.
    let members: [Member]
    /// Every member's bytes, one after the other: the line's metadata when the event and the provider have none.
    let all: [UInt8]

    private init(members: [Member], all: [UInt8]) {
        self.members = members
        self.all = all
    }

    init(_ metadata: Logger.Metadata, redaction: SecretRedaction) {
        var bytes: [UInt8] = []
        var members: [Member] = []
        for (topLevelKey, value) in metadata {
            var spans: [MemberSpan] = []
            JSONLogHandler.appendMembers(topLevelKey, value, redaction: redaction, to: &bytes, spans: &spans)
            for span in spans {
                members.append(
                    Member(key: span.key, topLevelKey: topLevelKey, bytes: Array(bytes[span.start..<span.end])))
            }
        }
        members.sort { $0.key < $1.key }
        self.init(members: members, all: members.flatMap(\.bytes))
    }
}

/// Where one rendered metadata member (`,"key":value`) is in a line, and its key.
private struct MemberSpan {
    var key: String
    var start: Int
    var end: Int
}

extension [MemberSpan] {
    /// Whether the members are in key order already (the usual case for one or two keys).
    fileprivate func isSorted() -> Bool {
        indices.dropFirst().allSatisfy { self[$0 - 1].key <= self[$0].key }
    }
}

import Foundation
import GatewayCore
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
    /// it: this runs for every key of every line).
    static func isFixedField(_ key: String) -> Bool {
        switch key {
        case "timestamp", "level", "label", "message", "source", "error": true
        default: false
        }
    }

    /// The logger's label.
    public let label: String
    /// Events below this level are dropped.
    public var logLevel: Logger.Level
    /// Metadata added to every event of this handler.
    public var metadata: Logger.Metadata = [:]
    /// Contextual metadata (e.g. from task locals), merged between handler and event metadata.
    public var metadataProvider: Logger.MetadataProvider?

    private let redaction: SecretRedaction
    private let clock: any GatewayClock
    private let write: @Sendable (String) -> Void
    /// Whether lines go to `LogLineWriter.standardError` (flushed after a critical line).
    private let toStandardError: Bool

    /// A handler for `label`. `write` receives each line, newline included (default: queued for standard
    /// error on `LogLineWriter.standardError`, so logging never makes a thread wait for the reader);
    /// `clock` stamps the events.
    public init(
        label: String,
        logLevel: Logger.Level = .info,
        redaction: SecretRedaction = SecretRedaction(),
        metadataProvider: Logger.MetadataProvider? = nil,
        clock: any GatewayClock = SystemClock(),
        write: (@Sendable (String) -> Void)? = nil
    ) {
        self.label = label
        self.logLevel = logLevel
        self.redaction = redaction
        self.metadataProvider = metadataProvider
        self.clock = clock
        self.write = write ?? { LogLineWriter.standardError.enqueue($0) }
        self.toStandardError = write == nil
    }

    /// The level named by the configuration's `logging.level` (trace … critical); nil for other text.
    public static func level(named name: String) -> Logger.Level? { Logger.Level(rawValue: name) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard event.level >= logLevel else { return }
        let bytes = lineBytes(for: event)
        if toStandardError {
            bytes.withUnsafeBytes { LogLineWriter.standardError.enqueue($0) }
        } else {
            write(String(decoding: bytes, as: UTF8.self))
        }
        // Only a critical line (the process is about to end) waits for the reader; every other line, on a loop
        // or not, is only queued (the exit flush writes what is left).
        if toStandardError && event.level == .critical { LogLineWriter.standardError.flush() }
    }

    /// The JSON line (with its trailing newline) for one event.
    func line(for event: LogEvent) -> String {
        String(decoding: lineBytes(for: event), as: UTF8.self)
    }

    /// The same line as UTF-8 bytes, built as bytes (no String appends).
    func lineBytes(for event: LogEvent) -> [UInt8] {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }

        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: #"{"timestamp":""#.utf8)
        JSONText.appendTimestamp(clock.wallNow(), to: &out)
        out.append(UInt8(ascii: "\""))
        func field(_ key: String, _ value: String) {
            out.append(UInt8(ascii: ","))
            JSONString.append(key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONString.append(value, to: &out)
        }
        field("level", event.level.rawValue)
        field("label", label)
        field("message", event.message.description)
        field("source", event.source)
        if let error = event.error { field("error", String(describing: error)) }

        var flat: [(key: String, value: Logger.MetadataValue)] = []
        flatten(merged, prefix: "", into: &flat)
        for (key, value) in flat.sorted(by: { $0.key < $1.key }) {
            out.append(UInt8(ascii: ","))
            JSONString.append(Self.isFixedField(key) ? "metadata.\(key)" : key, to: &out)
            out.append(UInt8(ascii: ":"))
            appendValue(value, to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// Dotted keys for nested dictionaries; a secret key's whole value (nested or not) is redacted.
    private func flatten(
        _ metadata: Logger.Metadata, prefix: String, into flat: inout [(key: String, value: Logger.MetadataValue)]
    ) {
        for (key, value) in metadata {
            let path = prefix.isEmpty ? key : "\(prefix).\(key)"
            if redaction.isSecret(key: key) {
                flat.append((path, .string(SecretRedaction.replacement)))
            } else if case .dictionary(let nested) = value, !nested.isEmpty {
                flatten(nested, prefix: path, into: &flat)
            } else {
                flat.append((path, value))
            }
        }
    }

    private func appendValue(_ value: Logger.MetadataValue, to out: inout [UInt8]) {
        switch value {
        case .string(let text):
            JSONString.append(text, to: &out)
        case .stringConvertible(let convertible):
            // Durations and counts stay numbers, so log queries can compare and sum them.
            if let number = JSONText.number(convertible) {
                out.append(contentsOf: number.utf8)
            } else {
                JSONString.append(convertible.description, to: &out)
            }
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(element, to: &out)
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
                    appendValue(inner, to: &out)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

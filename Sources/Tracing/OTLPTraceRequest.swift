import GatewayFoundation

/// OTLP's `ExportTraceServiceRequest` (opentelemetry-proto, `collector/trace/v1`) for a batch of spans of
/// one resource and one instrumentation scope: the body of a POST to `/v1/traces`.
///
/// Field numbers are opentelemetry-proto's: ExportTraceServiceRequest.resource_spans 1; ResourceSpans
/// resource 1, scope_spans 2; Resource.attributes 1; ScopeSpans scope 1, spans 2; InstrumentationScope name
/// 1, version 2; Span trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start_time_unix_nano 7
/// (fixed64), end_time_unix_nano 8 (fixed64), attributes 9, events 11, links 13, status 15, flags 16
/// (fixed32); Span.Event time_unix_nano 1 (fixed64), name 2, attributes 3; Span.Link trace_id 1, span_id 2,
/// trace_state 3, flags 6 (fixed32); Status message 2, code 3; KeyValue key 1, value 2; AnyValue string_value
/// 1, bool_value 2, int_value 3, double_value 4.
package struct OTLPTraceRequest: Sendable {
    /// The resource's attributes (`service.name` and the configured ones).
    package var resource: [SpanRecord.Attribute]
    /// The instrumentation scope's name and version.
    package var scopeName: String
    package var scopeVersion: String
    /// Longer string values are cut to this many bytes (at a character boundary), so a hostile method
    /// path or header cannot make a span arbitrarily large.
    package var maxStringBytes = 1024

    /// A request for `resource`'s spans, recorded by `scopeName` `scopeVersion`.
    package init(resource: [SpanRecord.Attribute], scopeName: String, scopeVersion: String) {
        self.resource = resource
        self.scopeName = scopeName
        self.scopeVersion = scopeVersion
    }

    /// The protobuf encoding of the request carrying `spans`.
    package func encode(_ spans: some Collection<SpanRecord>) -> [UInt8] {
        var writer = ProtobufWriter()
        writer.messageField(1) { resourceSpans in
            resourceSpans.messageField(1) { resource in
                for attribute in self.resource { resource.messageField(1) { write(attribute, into: &$0) } }
            }
            resourceSpans.messageField(2) { scopeSpans in
                scopeSpans.messageField(1) { scope in
                    scope.stringField(1, scopeName)
                    scope.stringField(2, scopeVersion)
                }
                for span in spans { scopeSpans.messageField(2) { write(span, into: &$0) } }
            }
        }
        return writer.bytes
    }

    private func write(_ span: SpanRecord, into writer: inout ProtobufWriter) {
        writer.bytesField(1, bigEndian(span.traceIDHigh) + bigEndian(span.traceIDLow))
        writer.bytesField(2, bigEndian(span.spanID))
        if span.parentSpanID != 0 { writer.bytesField(4, bigEndian(span.parentSpanID)) }
        writer.stringField(5, cut(span.name))
        writer.varintField(6, UInt64(span.kind.rawValue))
        writer.fixed64Field(7, span.startUnixNanos)
        writer.fixed64Field(8, span.endUnixNanos)
        for attribute in span.attributes { writer.messageField(9) { write(attribute, into: &$0) } }
        for event in span.events {
            writer.messageField(11) { encoded in
                encoded.fixed64Field(1, event.timeUnixNanos)
                encoded.stringField(2, cut(event.name))
                for attribute in event.attributes { encoded.messageField(3) { write(attribute, into: &$0) } }
            }
        }
        for link in span.links {
            writer.messageField(13) { encoded in
                encoded.bytesField(1, bigEndian(link.traceIDHigh) + bigEndian(link.traceIDLow))
                encoded.bytesField(2, bigEndian(link.spanID))
                if let state = link.traceState { encoded.stringField(3, cut(state)) }
                // SpanFlags as for the span: trace flags, and bit 8 (known) with bit 9 (remote).
                encoded.fixed32Field(6, UInt32(link.traceFlags) | (link.isRemote ? 0x300 : 0x100))
            }
        }
        switch span.status {
        case .unset: break
        case .ok: writer.messageField(15) { $0.varintField(3, 1) }
        case .error(let message):
            writer.messageField(15) { status in
                status.stringField(2, cut(message))
                status.varintField(3, 2)
            }
        }
        // SpanFlags: the W3C trace flags in bits 0-7; bit 8 says bit 9 is known, bit 9 that the parent is remote.
        let remote: UInt32 = span.parentSpanID == 0 ? 0 : span.parentIsRemote ? 0x300 : 0x100
        writer.fixed32Field(16, UInt32(span.traceFlags) | remote)
    }

    private func write(_ attribute: SpanRecord.Attribute, into writer: inout ProtobufWriter) {
        writer.stringField(1, cut(attribute.key))
        // AnyValue is a oneof: the member written is the type, so a zero or empty value is written too.
        writer.messageField(2) { value in
            switch attribute.value {
            case .string(let text): value.stringField(1, cut(text), keepDefault: true)
            case .bool(let flag): value.boolField(2, flag, keepDefault: true)
            case .int(let number): value.varintField(3, UInt64(bitPattern: number), keepDefault: true)
            case .double(let number): value.doubleField(4, number, keepDefault: true)
            }
        }
    }

    /// `text` cut to `maxStringBytes` UTF-8 bytes, at a character boundary.
    private func cut(_ text: String) -> String {
        let utf8 = text.utf8
        guard utf8.count > maxStringBytes else { return text }
        var end = utf8.index(utf8.startIndex, offsetBy: maxStringBytes)
        // Back to the first byte of a scalar (continuation bytes are 0b10xxxxxx).
        while end > utf8.startIndex, utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
        return String(decoding: utf8[..<end], as: UTF8.self)
    }

    private func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) }
    }
}

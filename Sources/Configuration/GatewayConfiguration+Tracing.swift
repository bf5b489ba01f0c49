import AppStoreDomain
import Tracing

extension GatewayConfiguration {
    /// The `tracing` keys: the exporter's own settings.
    package typealias Tracing = OTLPTracer.Settings

    /// Reads the `tracing` keys, each overridden by its `OTEL_*` variable in `environment` (an empty variable
    /// counts as unset, as OpenTelemetry says).
    static func tracing(
        _ reader: ConfigurationReader, environment: [String: String]
    ) -> (Tracing, [ConfigurationError]) {
        var tracing = Tracing()
        var problems: [ConfigurationError] = []
        func key(_ body: () throws(ConfigurationError) -> Void) {
            do throws(ConfigurationError) { try body() } catch { problems.append(error) }
        }
        /// The file's (or APPSTORE_GATEWAY_TRACING_…) value, unless an OTEL variable names another.
        func text(_ path: String, _ variables: String...) throws(ConfigurationError) -> (String, from: String)? {
            let fromFile = try reader.string("tracing.\(path)")
            for variable in variables {
                if let value = environment[variable], !value.trimmingSpaces().isEmpty { return (value, variable) }
            }
            return fromFile.map { ($0, "tracing.\(path)") }
        }
        /// Milliseconds: an OTEL variable holds a bare integer of milliseconds, the file a duration with a unit.
        func milliseconds(_ path: String, _ variables: String...) throws(ConfigurationError) -> UInt64? {
            let fromFile = try reader.milliseconds("tracing.\(path)")
            for variable in variables {
                guard let value = environment[variable]?.trimmingSpaces(), !value.isEmpty else { continue }
                guard let number = UInt64(value), number <= 3_600_000 else {
                    throw ConfigurationError(
                        key: variable, problem: "must be a whole number of milliseconds up to 3600000, got '\(value)'")
                }
                return number
            }
            return fromFile
        }
        func integer(_ path: String, _ variable: String, in range: ClosedRange<Int>) throws(ConfigurationError)
            -> Int?
        {
            guard let (value, from) = try text(path, variable) else { return nil }
            guard let number = Int(value.trimmingSpaces()), range.contains(number) else {
                throw ConfigurationError(
                    key: from,
                    problem: "must be an integer between \(range.lowerBound) and \(range.upperBound), got '\(value)'")
            }
            return number
        }

        key { () throws(ConfigurationError) in
            if let value = environment["OTEL_SDK_DISABLED"]?.trimmingSpaces().lowercased(), !value.isEmpty {
                guard value == "true" || value == "false" else {
                    throw ConfigurationError(key: "OTEL_SDK_DISABLED", problem: "must be true or false, got '\(value)'")
                }
                tracing.disabled = value == "true"
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text(
                "protocol", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
            {
                guard value.trimmingSpaces() == "http/protobuf" else {
                    throw ConfigurationError(
                        key: from, problem: "only http/protobuf is supported (OTLP over HTTP), got '\(value)'")
                }
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("exporter", "OTEL_TRACES_EXPORTER") {
                switch value.trimmingSpaces() {
                case "otlp": break
                case "none": tracing.disabled = true
                default: throw ConfigurationError(key: from, problem: "must be otlp or none, got '\(value)'")
                }
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT") {
                tracing.endpoint = try endpointURL(value, key: from)
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("tracesEndpoint", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                tracing.tracesEndpoint = try endpointURL(value, key: from)
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text(
                "headers", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
            {
                tracing.headers = try pairs(value, key: from, names: .header)
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("serviceName", "OTEL_SERVICE_NAME") {
                let name = value.trimmingSpaces()
                guard name.utf8.count <= 256, !name.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                    throw ConfigurationError(key: from, problem: "must be at most 256 bytes without control characters")
                }
                tracing.serviceName = name
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("resourceAttributes", "OTEL_RESOURCE_ATTRIBUTES") {
                tracing.resourceAttributes = try pairs(value, key: from, names: .attribute)
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("sampler", "OTEL_TRACES_SAMPLER") {
                guard let sampler = Tracing.Sampler(rawValue: value.trimmingSpaces()) else {
                    throw ConfigurationError(
                        key: from,
                        problem: "must be one of \(Tracing.Sampler.allCases.map(\.rawValue).joined(separator: ", ")), "
                            + "got '\(value)'")
                }
                tracing.sampler = sampler
            }
        }
        key { () throws(ConfigurationError) in
            if let (value, from) = try text("samplerArg", "OTEL_TRACES_SAMPLER_ARG") {
                guard let ratio = Double(value.trimmingSpaces()), ratio >= 0, ratio <= 1 else {
                    throw ConfigurationError(key: from, problem: "must be a ratio between 0 and 1, got '\(value)'")
                }
                tracing.samplerRatio = ratio
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try milliseconds("timeout", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT") {
                guard (1...60_000).contains(v) else {
                    throw ConfigurationError(key: "tracing.timeout", problem: "must be between 1ms and 60s")
                }
                tracing.timeout = .milliseconds(v)
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try integer("maxQueueSize", "OTEL_BSP_MAX_QUEUE_SIZE", in: 1...1_000_000) {
                tracing.maxQueueSize = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try integer("maxExportBatchSize", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", in: 1...100_000) {
                tracing.maxExportBatchSize = v
            }
        }
        key { () throws(ConfigurationError) in
            if let v = try milliseconds("scheduleDelay", "OTEL_BSP_SCHEDULE_DELAY") {
                guard (1...600_000).contains(v) else {
                    throw ConfigurationError(key: "tracing.scheduleDelay", problem: "must be between 1ms and 10m")
                }
                tracing.scheduleDelay = .milliseconds(v)
            }
        }
        if tracing.maxExportBatchSize > tracing.maxQueueSize {
            // OpenTelemetry: the batch is at most the queue.
            tracing.maxExportBatchSize = tracing.maxQueueSize
        }
        return (tracing, problems)
    }

    /// An http(s) URL with a host, no spaces or control characters.
    private static func endpointURL(_ text: String, key: String) throws(ConfigurationError) -> String {
        let url = text.trimmingSpaces()
        let lower = url.lowercased()
        let rest =
            lower.hasPrefix("https://") ? url.dropFirst(8) : lower.hasPrefix("http://") ? url.dropFirst(7) : nil
        guard let rest, !rest.isEmpty, rest.first != "/", url.utf8.count <= 2048,
            url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw ConfigurationError(
                key: key, problem: "must be an http(s) URL such as http://collector:4318, got '\(text.prefix(256))'")
        }
        return url
    }

    private enum PairNames { case header, attribute }

    /// `name=value,…` as OpenTelemetry writes headers and resource attributes (W3C Baggage's format): items
    /// trimmed, values percent-decoded, empty items skipped. A header's name must be an HTTP token and no
    /// value may hold a control character (a decoded CR or LF would start another header).
    private static func pairs(_ text: String, key: String, names: PairNames) throws(ConfigurationError) -> [Tracing
        .Pair]
    {
        guard text.utf8.count <= 8192 else { throw ConfigurationError(key: key, problem: "must be at most 8192 bytes") }
        var result: [Tracing.Pair] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = String(item).trimmingSpaces()
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw ConfigurationError(key: key, problem: "each item must be name=value, got '\(trimmed.prefix(64))'")
            }
            let name = String(trimmed[..<equals]).trimmingSpaces()
            guard let value = percentDecoded(String(trimmed[trimmed.index(after: equals)...]).trimmingSpaces()),
                !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else {
                throw ConfigurationError(
                    key: key, problem: "the value of '\(name.prefix(64))' is not valid percent-encoded text")
            }
            let validName =
                switch names {
                case .header: !name.isEmpty && name.utf8.allSatisfy(isTokenByte)
                case .attribute:
                    !name.isEmpty && !name.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
                }
            guard validName else {
                throw ConfigurationError(key: key, problem: "'\(name.prefix(64))' is not a valid name")
            }
            result.append(Tracing.Pair(names == .header ? name.lowercased() : name, value))
        }
        return result
    }

    /// RFC 9110's tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// `%XX` sequences decoded (UTF-8); nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexDigit), let low = iterator.next().flatMap(hexDigit) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Pieces of the Prometheus text exposition format, version 0.0.4
/// (prometheus/docs `content/docs/instrumenting/exposition_formats.md`).
enum PrometheusTextFormat {
    /// `HELP` text escapes only backslash and line feed.
    static func escapeHelp(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Label values escape backslash, double quote and line feed.
    static func escapeLabelValue(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A sample value: `+Inf`, `-Inf`, `NaN`, integral values without a fraction (`3`), others as Swift's
    /// shortest round-tripping form (`0.25`, `1e-05`), which Go's `ParseFloat` reads back exactly.
    static func formatValue(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// `{a="x",b="y"}`, or nothing when there are no labels.
    static func labelSet(names: [String], values: [String], extra: (name: String, value: String)? = nil) -> String {
        if names.isEmpty && extra == nil { return "" }
        var parts: [String] = []
        parts.reserveCapacity(names.count + 1)
        for (name, value) in zip(names, values) {
            parts.append("\(name)=\"\(escapeLabelValue(value))\"")
        }
        if let extra { parts.append("\(extra.name)=\"\(escapeLabelValue(extra.value))\"") }
        return "{" + parts.joined(separator: ",") + "}"
    }
}

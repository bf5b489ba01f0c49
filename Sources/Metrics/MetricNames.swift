/// The names a metric and its labels may have (Prometheus's data model, which OpenMetrics keeps): checked when a
/// family is registered, so an exposition never meets an invalid one.
enum MetricNames {
    /// Metric names: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    static func isValidMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first else { return false }
        func head(_ s: Unicode.Scalar) -> Bool { s.isASCII && (s.properties.isAlphabetic || s == "_" || s == ":") }
        return head(first) && name.unicodeScalars.dropFirst().allSatisfy { head($0) || ("0"..."9").contains($0) }
    }

    /// Label names: `[a-zA-Z_][a-zA-Z0-9_]*`, and names starting with `__` are reserved.
    static func isValidLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !name.hasPrefix("__") else { return false }
        func head(_ s: Unicode.Scalar) -> Bool { s.isASCII && (s.properties.isAlphabetic || s == "_") }
        return head(first) && name.unicodeScalars.dropFirst().allSatisfy { head($0) || ("0"..."9").contains($0) }
    }
}

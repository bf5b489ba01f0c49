import Metrics

extension MetricsRegistry {
    /// The `Content-Type` of `render()`'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every family in registration order, in the text exposition format 0.0.4 (the admin server's `/metrics`).
    public func render() -> String {
        var output = ""
        for family in families {
            output += "# HELP \(family.name) \(PrometheusTextFormat.escapeHelp(family.help))\n"
            switch family {
            case .counter(let counters):
                output += "# TYPE \(family.name) counter\n"
                for (values, counter) in counters.series {
                    let labels = PrometheusTextFormat.labelSet(names: counters.labelNames, values: values)
                    output += "\(family.name)\(labels) \(PrometheusTextFormat.formatValue(counter.current))\n"
                }
            case .gauge(let gauges):
                output += "# TYPE \(family.name) gauge\n"
                for (values, gauge) in gauges.series {
                    let labels = PrometheusTextFormat.labelSet(names: gauges.labelNames, values: values)
                    output += "\(family.name)\(labels) \(PrometheusTextFormat.formatValue(gauge.current))\n"
                }
            case .histogram(let histograms):
                output += "# TYPE \(family.name) histogram\n"
                Self.render(histograms, into: &output)
            }
        }
        return output
    }

    /// A histogram family's samples: cumulative buckets (`le`), then the sum and the count of each series.
    private static func render(_ family: HistogramFamily, into output: inout String) {
        let name = family.name
        for (values, histogram) in family.series {
            let snapshot = histogram.snapshot
            var cumulative: UInt64 = 0
            for (index, count) in snapshot.bucketCounts.enumerated() {
                cumulative += count
                let bound = index < snapshot.upperBounds.count ? snapshot.upperBounds[index] : .infinity
                let labels = PrometheusTextFormat.labelSet(
                    names: family.labelNames, values: values, extra: ("le", PrometheusTextFormat.formatValue(bound)))
                output += "\(name)_bucket\(labels) \(cumulative)\n"
            }
            let labels = PrometheusTextFormat.labelSet(names: family.labelNames, values: values)
            output += "\(name)_sum\(labels) \(PrometheusTextFormat.formatValue(snapshot.sum))\n"
            output += "\(name)_count\(labels) \(snapshot.count)\n"
        }
    }
}

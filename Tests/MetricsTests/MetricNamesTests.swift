import Testing

@testable import Metrics

/// The names a family and its labels may have, checked when it is registered.
@Suite struct MetricNamesTests {
    @Test func namesAreValidated() {
        #expect(MetricNames.isValidMetricName("gateway:rpc_total"))
        #expect(!MetricNames.isValidMetricName("1abc"))
        #expect(!MetricNames.isValidMetricName("a-b"))
        #expect(MetricNames.isValidLabelName("method"))
        #expect(!MetricNames.isValidLabelName("__name"))
        #expect(!MetricNames.isValidLabelName("a:b"))
    }
}

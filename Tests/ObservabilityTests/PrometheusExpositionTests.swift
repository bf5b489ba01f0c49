import Metrics
import Testing

@testable import Observability

@Suite struct PrometheusExpositionTests {
    @Test func fixedExampleRendersExactly() {
        let registry = MetricsRegistry()
        let requests = registry.counter(
            "gateway_rpc_requests_total", help: "RPCs handled.", labelNames: ["method", "code"])
        requests.labels("VerifyJWS", "OK").increment()
        requests.labels("VerifyJWS", "OK").increment(by: 2)
        requests.labels("GetHistory", "UNAVAILABLE").increment()
        let streams = registry.gauge("gateway_open_streams", help: "Open HTTP/2 streams.")
        streams.set(3)
        streams.labels().decrement(by: 0.5)
        let latency = registry.histogram(
            "gateway_rpc_duration_seconds", help: "RPC latency.", labelNames: ["method"], buckets: [0.1, 1, 2.5])
        let verify = latency.labels("VerifyJWS")
        verify.observe(0.05)
        verify.observe(0.1)  // `le` is inclusive
        verify.observe(2)
        verify.observe(30)

        let expected = """
            # HELP gateway_rpc_requests_total RPCs handled.
            # TYPE gateway_rpc_requests_total counter
            gateway_rpc_requests_total{method="GetHistory",code="UNAVAILABLE"} 1
            gateway_rpc_requests_total{method="VerifyJWS",code="OK"} 3
            # HELP gateway_open_streams Open HTTP/2 streams.
            # TYPE gateway_open_streams gauge
            gateway_open_streams 2.5
            # HELP gateway_rpc_duration_seconds RPC latency.
            # TYPE gateway_rpc_duration_seconds histogram
            gateway_rpc_duration_seconds_bucket{method="VerifyJWS",le="0.1"} 2
            gateway_rpc_duration_seconds_bucket{method="VerifyJWS",le="1"} 2
            gateway_rpc_duration_seconds_bucket{method="VerifyJWS",le="2.5"} 3
            gateway_rpc_duration_seconds_bucket{method="VerifyJWS",le="+Inf"} 4
            gateway_rpc_duration_seconds_sum{method="VerifyJWS"} 32.15
            gateway_rpc_duration_seconds_count{method="VerifyJWS"} 4

            """
        #expect(registry.render() == expected)
    }

    @Test func unlabelledMetricsStartAtZero() {
        let registry = MetricsRegistry()
        _ = registry.counter("a_total", help: "A.")
        _ = registry.histogram("b_seconds", help: "B.", buckets: [1])
        #expect(
            registry.render() == """
                # HELP a_total A.
                # TYPE a_total counter
                a_total 0
                # HELP b_seconds B.
                # TYPE b_seconds histogram
                b_seconds_bucket{le="1"} 0
                b_seconds_bucket{le="+Inf"} 0
                b_seconds_sum 0
                b_seconds_count 0

                """)
    }

    @Test func labelValuesAndHelpAreEscaped() {
        let registry = MetricsRegistry()
        let family = registry.counter("escapes_total", help: "Back\\slash and\nnewline \"kept\".", labelNames: ["v"])
        family.labels("a\"b\\c\nd").increment()
        #expect(
            registry.render() == """
                # HELP escapes_total Back\\\\slash and\\nnewline "kept".
                # TYPE escapes_total counter
                escapes_total{v="a\\"b\\\\c\\nd"} 1

                """)
    }

    @Test func specialValues() {
        #expect(PrometheusTextFormat.formatValue(.infinity) == "+Inf")
        #expect(PrometheusTextFormat.formatValue(-.infinity) == "-Inf")
        #expect(PrometheusTextFormat.formatValue(.nan) == "NaN")
        #expect(PrometheusTextFormat.formatValue(-2) == "-2")
        #expect(PrometheusTextFormat.formatValue(0.005) == "0.005")
        #expect(PrometheusTextFormat.formatValue(1e20) == "1e+20")
    }

    @Test func registeringTwiceReturnsTheSameFamily() {
        let registry = MetricsRegistry()
        let first = registry.counter("x_total", help: "X.", labelNames: ["k"])
        let second = registry.counter("x_total", help: "X.", labelNames: ["k"])
        first.labels("v").increment()
        #expect(second.labels("v").current == 1)
        #expect(first === second)
    }

    @Test func concurrentIncrementsAreAllCounted() async {
        let registry = MetricsRegistry()
        let family = registry.counter("concurrent_total", help: "C.", labelNames: ["shard"])
        let histogram = registry.histogram("concurrent_seconds", help: "H.", buckets: [0.5])
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    let counter = family.labels(String(task % 4))
                    for _ in 0..<1000 {
                        counter.increment()
                        histogram.observe(0.25)
                    }
                }
            }
        }
        let total = (0..<4).map { family.labels(String($0)).current }.reduce(0, +)
        #expect(total == 16_000)
        let snapshot = histogram.labels().snapshot
        #expect(snapshot.count == 16_000)
        #expect(snapshot.bucketCounts == [16_000, 0])
        #expect(snapshot.sum == 4000)
    }
}

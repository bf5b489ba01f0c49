import GatewayFoundation
import Testing
import Tracing

/// OpenTelemetry's samplers: the caller's flag for the parent-based ones, the trace id's randomness for the
/// ratio, always the same answer for one trace.
@Suite struct TraceSamplerTests {
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    let span = "00f067aa0ba902b7"

    @Test func parentBasedFollowsTheCallersFlag() {
        let sampledParent = TraceContext(traceparent: "00-\(trace)-\(span)-01", tracestate: nil)
        let unsampledParent = TraceContext(traceparent: "00-\(trace)-\(span)-00", tracestate: nil)
        let root = TraceContext(traceparent: nil, tracestate: nil)
        let on = TraceSampler(.parentBasedAlwaysOn)
        #expect(on.shouldSample(sampledParent) && !on.shouldSample(unsampledParent) && on.shouldSample(root))
        let off = TraceSampler(.parentBasedAlwaysOff)
        #expect(off.shouldSample(sampledParent) && !off.shouldSample(unsampledParent) && !off.shouldSample(root))
        let ratio = TraceSampler(.parentBasedTraceIDRatio, ratio: 0)
        #expect(ratio.shouldSample(sampledParent) && !ratio.shouldSample(root))
    }

    @Test func alwaysOnAndOffIgnoreTheParent() {
        #expect(TraceSampler(.alwaysOn).shouldSample(traceIDLow: 0, remoteParentSampled: false))
        #expect(!TraceSampler(.alwaysOff).shouldSample(traceIDLow: .max, remoteParentSampled: true))
    }

    @Test(arguments: [0.0, 0.25, 0.5, 1.0])
    func theRatioKeepsThatShareOfTraceIDs(ratio: Double) {
        let sampler = TraceSampler(.traceIDRatio, ratio: ratio)
        // Trace ids spread evenly over the 56 bits of randomness: the kept share is the ratio.
        let count = 1024
        let kept = (0..<count).filter { index in
            sampler.shouldSample(traceIDLow: UInt64(index) << 46 | 0xABC, remoteParentSampled: true)
        }.count
        #expect(kept == Int(ratio * Double(count)))
    }

    @Test func theRatioDecidesOnTheLow56BitsOnly() {
        let sampler = TraceSampler(.traceIDRatio, ratio: 0.5)
        // The top byte of the low half is not randomness (W3C level 2): it never changes the decision.
        #expect(sampler.shouldSample(traceIDLow: 0x0080_0000_0000_0000, remoteParentSampled: nil))
        #expect(sampler.shouldSample(traceIDLow: 0xFF80_0000_0000_0000, remoteParentSampled: nil))
        #expect(!sampler.shouldSample(traceIDLow: 0xFF7F_FFFF_FFFF_FFFF, remoteParentSampled: nil))
    }

    @Test func outOfRangeRatiosAreClamped() {
        #expect(TraceSampler(.traceIDRatio, ratio: 7).shouldSample(traceIDLow: 0, remoteParentSampled: nil))
        #expect(!TraceSampler(.traceIDRatio, ratio: -1).shouldSample(traceIDLow: .max, remoteParentSampled: nil))
        #expect(!TraceSampler(.traceIDRatio, ratio: .nan).shouldSample(traceIDLow: .max, remoteParentSampled: nil))
    }
}

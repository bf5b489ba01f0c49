import GatewayFoundation

/// OpenTelemetry's built-in samplers (`OTEL_TRACES_SAMPLER`), deciding from the trace context alone so that
/// every span of one call gets the same answer.
///
/// The parent-based samplers follow the caller's `sampled` flag when a `traceparent` came, and the root
/// sampler otherwise; a trace started here is sampled by the root sampler. `traceidratio` keeps a trace when
/// the randomness of its id (its 56 least significant bits, W3C Trace Context level 2) is at least
/// (1 − ratio) × 2⁵⁶: every process with the same ratio makes the same decision for the same trace.
package struct TraceSampler: Sendable, Equatable {
    /// The configured sampler.
    package let sampler: OTLPTracer.Settings.Sampler
    /// The ratio samplers' threshold: a trace whose randomness is below it is not sampled.
    let threshold: UInt64

    /// `sampler` with `ratio` (clamped to [0, 1]; ignored by the samplers without a ratio).
    package init(_ sampler: OTLPTracer.Settings.Sampler, ratio: Double = 1) {
        self.sampler = sampler
        let kept = ratio.isNaN ? 0 : min(max(ratio, 0), 1)
        threshold = UInt64(((1 - kept) * 0x1p56).rounded(.down))
    }

    /// The sampler a tracing configuration names.
    package init(_ tracing: OTLPTracer.Settings) {
        self.init(tracing.sampler, ratio: tracing.samplerRatio)
    }

    /// Whether spans of `trace` are recorded.
    package func shouldSample(_ trace: TraceContext) -> Bool {
        shouldSample(
            traceIDLow: trace.traceIDValue.low,
            remoteParentSampled: trace.parentSpanIDValue == nil ? nil : trace.callerSampled)
    }

    /// The decision for a trace whose id ends in `traceIDLow`; `remoteParentSampled` is the caller's flag,
    /// nil when the trace starts here.
    package func shouldSample(traceIDLow: UInt64, remoteParentSampled: Bool?) -> Bool {
        switch sampler {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio: return ratioKeeps(traceIDLow)
        case .parentBasedAlwaysOn: return remoteParentSampled ?? true
        case .parentBasedAlwaysOff: return remoteParentSampled ?? false
        case .parentBasedTraceIDRatio: return remoteParentSampled ?? ratioKeeps(traceIDLow)
        }
    }

    private func ratioKeeps(_ traceIDLow: UInt64) -> Bool {
        traceIDLow & 0x00FF_FFFF_FFFF_FFFF >= threshold
    }
}

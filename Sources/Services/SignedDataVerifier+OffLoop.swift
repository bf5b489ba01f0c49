import GatewayFoundation
import SignedData

extension SignedDataVerifier {
    /// `jws` verified in the calling task, on its loop, when that needs only cache lookups (`verifyIfCached`);
    /// else off the loop in one hop each way (`offLoop`), with every online check done.
    func verifyOffLoopUnlessCached(
        _ jws: String, kind: SignedDataKind? = nil, requirements: VerificationRequirements = .none
    ) async -> VerificationResult {
        if let result = verifyIfCached(jws, kind: kind, requirements: requirements) { return result }
        return await offLoop { await verifyOnline(jws, kind: kind, requirements: requirements) }
    }
}

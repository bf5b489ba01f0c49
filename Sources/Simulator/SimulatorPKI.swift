import Cryptography
import Foundation
import GatewayFoundation

/// The simulator's signing PKI, shaped like Apple's (Apple's App Store Server API documentation): a P-384 root, a P-384
/// intermediate CA (path length 0) carrying 1.2.840.113635.100.6.2.1, and a P-256 leaf carrying
/// 1.2.840.113635.100.6.11.1, with key identifiers and Apple-like validity periods.
package struct SimulatorPKI: Sendable {
    /// Apple's WWDR intermediate marker.
    package static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"
    /// Apple's receipt-signing leaf marker.
    package static let leafMarkerOID = "1.2.840.113635.100.6.11.1"

    package let root: CertificateIssuer
    package let intermediate: CertificateIssuer
    package let leaf: Certificate
    package let leafKey: ECPrivateKey

    private static let day: TimeInterval = 86_400
    static let intermediateSubject = DistinguishedName(
        commonName: "Simulator Worldwide Developer Relations Certification Authority",
        organizationalUnit: "G6", organization: "appstore-gateway", country: "US")
    static let leafSubject = DistinguishedName(
        commonName: "Simulated ECC Mac App Store and iTunes Store Receipt Signing",
        organizationalUnit: "Apple Worldwide Developer Relations", organization: "appstore-gateway", country: "US")

    /// Pairs existing certificates and keys (as loaded from a state directory).
    package init(root: CertificateIssuer, intermediate: CertificateIssuer, leaf: Certificate, leafKey: ECPrivateKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
    }

    /// Mints a new PKI around `referenceTime`: root valid 25 years (from 5 years before), intermediate
    /// 15 years (from 4 years before), leaf about 2 years (from 400 days before), as Apple's are.
    package init(generatingAround referenceTime: Date, serialSeed: UInt64) throws(CryptographyError) {
        var random = DeterministicRandom(seed: serialSeed, stream: "pki")
        let rootKey = try ECPrivateKey(generatingOn: .p384)
        root = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(
                    commonName: "App Store Simulator Root CA - G3",
                    organizationalUnit: "Simulator Certification Authority",
                    organization: "appstore-gateway", country: "US"),
                serialNumber: random.next() >> 1, notBefore: referenceTime - 5 * 365 * Self.day,
                notAfter: referenceTime + 20 * 365 * Self.day, role: .certificateAuthority(pathLength: nil)),
            key: rootKey)
        let intermediateKey = try ECPrivateKey(generatingOn: .p384)
        intermediate = CertificateIssuer(
            certificate: try root.issue(
                CertificateTemplate(
                    subject: Self.intermediateSubject,
                    serialNumber: random.next() >> 1, notBefore: referenceTime - 4 * 365 * Self.day,
                    notAfter: referenceTime + 11 * 365 * Self.day, role: .certificateAuthority(pathLength: 0),
                    markerExtensionOIDs: [Self.intermediateMarkerOID]),
                for: intermediateKey.publicKey),
            privateKey: intermediateKey)
        leafKey = try ECPrivateKey(generatingOn: .p256)
        leaf = try intermediate.issue(
            CertificateTemplate(
                subject: Self.leafSubject,
                serialNumber: random.next() >> 1, notBefore: referenceTime - 400 * Self.day,
                notAfter: referenceTime + 400 * Self.day, role: .endEntity,
                markerExtensionOIDs: [Self.leafMarkerOID]),
            for: leafKey.publicKey)
    }

    /// The `x5c` header value: leaf, intermediate, root as standard base64 DER.
    package var x5c: [String] {
        [leaf, intermediate.certificate, root.certificate].map { Base64.encode($0.derBytes, variant: .standard) }
    }

    /// A compact JWS of `payload` the way the App Store signs: header `{"alg":"ES256","x5c":[…]}`.
    package func sign(_ payload: OrderedJSON) throws(CryptographyError) -> String {
        let header = OrderedJSON.object([("alg", .string("ES256")), ("x5c", .array(x5c.map { .string($0) }))])
        let input = Base64URL.encode(header.encoded) + "." + Base64URL.encode(payload.encoded)
        let signature = try leafKey.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }
}

/// The simulator's PKI as Apple's is online: intermediate and leaf name an OCSP responder (Authority
/// Information Access), and a second leaf exists that the responder reports revoked.
package struct OnlineSimulatorPKI: Sendable {
    /// Signs as the simulator normally does (a good leaf).
    package let signing: SimulatorPKI
    /// Signs with the revoked leaf (fault `revoked-signer`).
    package let revoked: SimulatorPKI
    /// Serial numbers (big-endian bytes) the responder reports revoked.
    package let revokedSerials: Set<[UInt8]>

    /// The DER OCSP response to a DER request, as the simulator's responder answers at `now`: good for every
    /// certificate of this PKI except `revokedSerials`, valid one hour.
    package func ocspResponse(to request: [UInt8], now: Date) -> [UInt8] {
        OCSPResponder.response(
            to: request, issuers: [signing.root, signing.intermediate], revokedSerials: revokedSerials, now: now,
            validity: 3_600)
    }
}

extension SimulatorPKI {
    /// This PKI with intermediate and leaf re-issued (same keys, subjects, serial numbers and validity) naming
    /// `responderURL` as their OCSP responder, plus a revoked leaf (a fresh key, the leaf's serial + 1).
    /// Payloads signed before verify the same way: the root is unchanged.
    package func online(responderURL: String) throws(CryptographyError) -> OnlineSimulatorPKI {
        func serial(_ certificate: Certificate) -> UInt64 {
            certificate.serialNumber.suffix(8).reduce(0) { $0 << 8 | UInt64($1) }
        }
        let original = intermediate.certificate
        let onlineIntermediate = CertificateIssuer(
            certificate: try root.issue(
                CertificateTemplate(
                    subject: Self.intermediateSubject, serialNumber: serial(original), notBefore: original.notBefore,
                    notAfter: original.notAfter, role: .certificateAuthority(pathLength: 0),
                    markerExtensionOIDs: [Self.intermediateMarkerOID], ocspResponderURL: responderURL),
                for: try original.publicKey()),
            privateKey: intermediate.privateKey)
        func leafTemplate(serial: UInt64) -> CertificateTemplate {
            CertificateTemplate(
                subject: Self.leafSubject, serialNumber: serial, notBefore: leaf.notBefore, notAfter: leaf.notAfter,
                role: .endEntity, markerExtensionOIDs: [Self.leafMarkerOID], ocspResponderURL: responderURL)
        }
        let onlineLeaf = try onlineIntermediate.issue(leafTemplate(serial: serial(leaf)), for: try leafKey.publicKey)
        let revokedKey = try ECPrivateKey(generatingOn: .p256)
        let revokedLeaf = try onlineIntermediate.issue(
            leafTemplate(serial: serial(leaf) &+ 1), for: try revokedKey.publicKey)
        return OnlineSimulatorPKI(
            signing: SimulatorPKI(root: root, intermediate: onlineIntermediate, leaf: onlineLeaf, leafKey: leafKey),
            revoked: SimulatorPKI(root: root, intermediate: onlineIntermediate, leaf: revokedLeaf, leafKey: revokedKey),
            revokedSerials: [revokedLeaf.serialNumber])
    }
}

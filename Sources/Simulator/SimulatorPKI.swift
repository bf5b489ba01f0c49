import Cryptography
import Foundation
import GatewayCore

/// The simulator's signing PKI, shaped like Apple's (Apple's App Store Server API documentation): a P-384 root, a P-384
/// intermediate CA (path length 0) carrying 1.2.840.113635.100.6.2.1, and a P-256 leaf carrying
/// 1.2.840.113635.100.6.11.1, with key identifiers and Apple-like validity periods.
public struct SimulatorPKI: Sendable {
    /// Apple's WWDR intermediate marker.
    public static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"
    /// Apple's receipt-signing leaf marker.
    public static let leafMarkerOID = "1.2.840.113635.100.6.11.1"

    public let root: CertificateIssuer
    public let intermediate: CertificateIssuer
    public let leaf: Certificate
    public let leafKey: ECPrivateKey

    private static let day: TimeInterval = 86_400

    /// Pairs existing certificates and keys (as loaded from a state directory).
    public init(root: CertificateIssuer, intermediate: CertificateIssuer, leaf: Certificate, leafKey: ECPrivateKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
    }

    /// Mints a new PKI around `referenceTime`: root valid 25 years (from 5 years before), intermediate
    /// 15 years (from 4 years before), leaf about 2 years (from 400 days before), as Apple's are.
    public init(generatingAround referenceTime: Date, serialSeed: UInt64) throws(CryptographyError) {
        var random = DeterministicRandom(seed: serialSeed, stream: "pki")
        let rootKey = try ECPrivateKey(generatingOn: .p384)
        root = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(
                    commonName: "App Store Simulator Root CA - G3", organizationalUnit: "Simulator Certification Authority",
                    organization: "appstore-gateway", country: "US"),
                serialNumber: random.next() >> 1, notBefore: referenceTime - 5 * 365 * Self.day,
                notAfter: referenceTime + 20 * 365 * Self.day, role: .certificateAuthority(pathLength: nil)),
            key: rootKey)
        let intermediateKey = try ECPrivateKey(generatingOn: .p384)
        intermediate = CertificateIssuer(
            certificate: try root.issue(
                CertificateTemplate(
                    subject: DistinguishedName(
                        commonName: "Simulator Worldwide Developer Relations Certification Authority",
                        organizationalUnit: "G6", organization: "appstore-gateway", country: "US"),
                    serialNumber: random.next() >> 1, notBefore: referenceTime - 4 * 365 * Self.day,
                    notAfter: referenceTime + 11 * 365 * Self.day, role: .certificateAuthority(pathLength: 0),
                    markerExtensionOIDs: [Self.intermediateMarkerOID]),
                for: intermediateKey.publicKey),
            privateKey: intermediateKey)
        leafKey = try ECPrivateKey(generatingOn: .p256)
        leaf = try intermediate.issue(
            CertificateTemplate(
                subject: DistinguishedName(
                    commonName: "Simulated ECC Mac App Store and iTunes Store Receipt Signing",
                    organizationalUnit: "Apple Worldwide Developer Relations", organization: "appstore-gateway",
                    country: "US"),
                serialNumber: random.next() >> 1, notBefore: referenceTime - 400 * Self.day,
                notAfter: referenceTime + 400 * Self.day, role: .endEntity,
                markerExtensionOIDs: [Self.leafMarkerOID]),
            for: leafKey.publicKey)
    }

    /// The `x5c` header value: leaf, intermediate, root as standard base64 DER.
    public var x5c: [String] {
        [leaf, intermediate.certificate, root.certificate].map { Base64.encode($0.derBytes, variant: .standard) }
    }

    /// A compact JWS of `payload` the way the App Store signs: header `{"alg":"ES256","x5c":[…]}`.
    public func sign(_ payload: OrderedJSON) throws(CryptographyError) -> String {
        let header = OrderedJSON.object([("alg", .string("ES256")), ("x5c", .array(x5c.map { .string($0) }))])
        let input = Base64URL.encode(header.encoded) + "." + Base64URL.encode(payload.encoded)
        let signature = try leafKey.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }
}

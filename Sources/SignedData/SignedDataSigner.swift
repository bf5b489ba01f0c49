import Cryptography
import Foundation
import GatewayFoundation

/// Signs payloads the way the App Store does: compact JWS, `alg` ES256, `x5c` = [leaf, intermediate, root]
/// in standard base64. For the App Store simulator and tests; pair it with `AppStoreTestPKI`.
package struct SignedDataSigner: Sendable {
    /// The leaf's P-256 key.
    package let signingKey: ECPrivateKey
    /// The certificates sent in `x5c`, leaf first.
    package let certificateChain: [Certificate]

    /// A signer for `signingKey` (P-256) whose certificates are `certificateChain` (leaf first).
    package init(signingKey: ECPrivateKey, certificateChain: [Certificate]) {
        self.signingKey = signingKey
        self.certificateChain = certificateChain
    }

    /// The compact JWS of `payload` (JSON bytes, signed as given).
    package func sign(payload: Data) throws(CryptographyError) -> String {
        let chain = certificateChain.map { "\"" + Base64.encode($0.derBytes, variant: .standard) + "\"" }
        let header = "{\"alg\":\"ES256\",\"x5c\":[" + chain.joined(separator: ",") + "]}"
        return try Self.sign(headerJSON: Data(header.utf8), payload: payload, key: signingKey)
    }

    /// A compact JWS over arbitrary header JSON: the building block for forged-input tests.
    package static func sign(headerJSON: Data, payload: Data, key: ECPrivateKey) throws(CryptographyError) -> String {
        let signingInput =
            Base64.encode(headerJSON, variant: .urlSafeUnpadded) + "."
            + Base64.encode(payload, variant: .urlSafeUnpadded)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.encode(signature, variant: .urlSafeUnpadded)
    }
}

/// A PKI shaped like Apple's (Apple's App Store Server API documentation), minted in code around one reference time: a P-384
/// self-signed root, a P-384 intermediate CA (pathlen 0) with the WWDR marker OID, and P-256 leaves with
/// the receipt-signing marker OID. Variants (no marker, other curve, other validity) come from `issueLeaf`
/// and `issueIntermediate`, all under the same root so one verifier configuration covers them.
package struct AppStoreTestPKI: Sendable {
    /// The reference time every validity period is placed around.
    package let referenceTime: Date
    /// The root CA (valid ±10 years around the reference time).
    package let root: CertificateIssuer
    /// The default intermediate (valid ±5 years, with the marker OID).
    package let intermediate: CertificateIssuer
    /// The default leaf (valid ±1 year, P-256, with the marker OID).
    package let leaf: Certificate
    /// The default leaf's key.
    package let leafKey: ECPrivateKey

    private static let year: TimeInterval = 365 * 86_400

    /// Mints the root, intermediate and leaf.
    package init(referenceTime: Date, rootName: String = "Test Root CA - G3") throws(CryptographyError) {
        self.referenceTime = referenceTime
        root = try CertificateIssuer.selfSignedRoot(
            CertificateTemplate(
                subject: DistinguishedName(
                    commonName: rootName, organizationalUnit: "Test Certification Authority",
                    organization: "appstore-gateway tests", country: "US"),
                serialNumber: 0x1001, notBefore: referenceTime - 10 * Self.year,
                notAfter: referenceTime + 10 * Self.year, role: .certificateAuthority(pathLength: nil)),
            key: ECPrivateKey(generatingOn: .p384))
        let intermediateKey = try ECPrivateKey(generatingOn: .p384)
        intermediate = CertificateIssuer(
            certificate: try Self.issueIntermediate(
                from: root, key: intermediateKey, withMarker: true, referenceTime: referenceTime),
            privateKey: intermediateKey)
        leafKey = try ECPrivateKey(generatingOn: .p256)
        leaf = try Self.issueLeaf(
            from: intermediate, key: leafKey, withMarker: true, notBefore: referenceTime - Self.year,
            notAfter: referenceTime + Self.year, serialNumber: 0x3001)
    }

    /// The signer for the default chain (x5c = leaf, intermediate, root).
    package var signer: SignedDataSigner {
        SignedDataSigner(signingKey: leafKey, certificateChain: [leaf, intermediate.certificate, root.certificate])
    }

    /// Another intermediate under the root, with or without the WWDR marker OID.
    package func issueIntermediate(withMarker: Bool) throws(CryptographyError) -> CertificateIssuer {
        let key = try ECPrivateKey(generatingOn: .p384)
        return CertificateIssuer(
            certificate: try Self.issueIntermediate(
                from: root, key: key, withMarker: withMarker, referenceTime: referenceTime),
            privateKey: key)
    }

    /// Another leaf (from `issuer`, default the intermediate), returning a signer for the full chain.
    package func issueLeaf(
        from issuer: CertificateIssuer? = nil, curve: EllipticCurve = .p256, withMarker: Bool = true,
        notBefore: Date? = nil, notAfter: Date? = nil, serialNumber: UInt64 = 0x3002
    ) throws(CryptographyError) -> SignedDataSigner {
        let issuer = issuer ?? intermediate
        let key = try ECPrivateKey(generatingOn: curve)
        let certificate = try Self.issueLeaf(
            from: issuer, key: key, withMarker: withMarker, notBefore: notBefore ?? referenceTime - Self.year,
            notAfter: notAfter ?? referenceTime + Self.year, serialNumber: serialNumber)
        return SignedDataSigner(
            signingKey: key, certificateChain: [certificate, issuer.certificate, root.certificate])
    }

    private static func issueIntermediate(
        from root: CertificateIssuer, key: ECPrivateKey, withMarker: Bool, referenceTime: Date
    ) throws(CryptographyError) -> Certificate {
        try root.issue(
            CertificateTemplate(
                subject: DistinguishedName(
                    commonName: "Test Worldwide Developer Relations Certification Authority",
                    organizationalUnit: "G6", organization: "appstore-gateway tests", country: "US"),
                serialNumber: 0x2001, notBefore: referenceTime - 5 * year, notAfter: referenceTime + 5 * year,
                role: .certificateAuthority(pathLength: 0),
                markerExtensionOIDs: withMarker ? [SignedDataVerifier.intermediateMarkerOID] : []),
            for: key.publicKey)
    }

    private static func issueLeaf(
        from issuer: CertificateIssuer, key: ECPrivateKey, withMarker: Bool, notBefore: Date, notAfter: Date,
        serialNumber: UInt64
    ) throws(CryptographyError) -> Certificate {
        try issuer.issue(
            CertificateTemplate(
                subject: DistinguishedName(
                    commonName: "Test ECC Mac App Store and iTunes Store Receipt Signing",
                    organizationalUnit: "Apple Worldwide Developer Relations", organization: "appstore-gateway tests",
                    country: "US"),
                serialNumber: serialNumber, notBefore: notBefore, notAfter: notAfter, role: .endEntity,
                markerExtensionOIDs: withMarker ? [SignedDataVerifier.leafMarkerOID] : []),
            for: key.publicKey)
    }
}

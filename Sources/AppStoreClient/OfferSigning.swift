import AppStoreDomain
import Cryptography
import Foundation
import GatewayFoundation

/// Signatures StoreKit asks an app's server for, made with the app's In-App Purchase key: the key stays in
/// the client's signers and only signatures leave.
extension AppStoreAPIClient {
    /// The StoreKit 1 promotional offer signature (Apple's "Generating a signature for promotional offers"):
    /// base64 of the DER ECDSA P-256/SHA-256 signature over bundle id, key id, product id, offer id, lower-cased
    /// application username, lower-cased nonce and timestamp, joined by U+2063.
    package func promotionalOfferSignature(
        app: App, productID: String, offerID: String, applicationUsername: String,
        nonce: String, timestamp: Int64
    ) throws(GatewayError) -> String {
        let separator = "\u{2063}"
        let message = [
            app.bundleId, app.keyId, productID, offerID, applicationUsername.lowercased(), nonce.lowercased(),
            String(timestamp),
        ].joined(separator: separator)
        let raw = try sign(Array(message.utf8), app: app)
        guard let der = ECDSASignatureEncoding.der(fromRaw: raw) else {
            throw .internalBug("the ES256 signature could not be DER-encoded", requestID: nil)
        }
        return Data(der).base64EncodedString()
    }

    /// A compact JWS for StoreKit (Apple's "Generating JWS to sign App Store requests"): header
    /// `{"alg":"ES256","kid":…,"typ":"JWT"}`, claims `iss`, `bid`, `aud`, `iat`, `nonce`, then `claims` (JSON
    /// values already encoded), signed with the app's key.
    package func storeKitJWS(
        app: App, audience: String, claims: [(String, String)], nonce: String, issuedAt: Int64
    ) throws(GatewayError) -> String {
        let all: [(String, String)] =
            [
                ("iss", JSONString.quoted(app.issuerId)), ("bid", JSONString.quoted(app.bundleId)),
                ("aud", JSONString.quoted(audience)), ("iat", String(issuedAt)), ("nonce", JSONString.quoted(nonce)),
            ] + claims
        let payload = "{" + all.map { JSONString.quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
        let input =
            Base64URL.encode(Array(AppStoreJWT.header(keyID: app.keyId).utf8)) + "."
            + Base64URL.encode(Array(payload.utf8))
        let signature = try sign(Array(input.utf8), app: app)
        guard signature.count == 64 else {
            throw .internalBug("the ES256 signer returned \(signature.count) bytes instead of 64", requestID: nil)
        }
        return input + "." + Base64URL.encode(signature)
    }

    /// The wall clock the client signs with (UNIX milliseconds).
    package var nowMilliseconds: Int64 { clock.wallNow().millisecondsSince1970 }

    private func sign(_ message: [UInt8], app: App) throws(GatewayError) -> [UInt8] {
        let signer = try signer(for: app)
        do {
            return try signer.sign(message)
        } catch {
            throw .internalBug("signing with the key of app \(app.name) failed", requestID: nil)
        }
    }
}

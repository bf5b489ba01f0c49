/// Converts ECDSA signatures between the fixed-width r‖s form (JWS, RFC 7518 §3.4) and DER (X9.62
/// ECDSA-Sig-Value), the form StoreKit 1 promotional offer signatures use.
package enum ECDSASignatureEncoding {
    /// The DER form of a fixed-width r‖s signature; nil when `raw` is empty or of odd length.
    package static func der(fromRaw raw: [UInt8]) -> [UInt8]? { ECDSA.derSignature(fromRaw: raw) }
}

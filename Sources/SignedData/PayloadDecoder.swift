import Foundation
import GatewayFoundation
import ProtoCodec

/// A verified payload decoded into the gateway's proto value types: the VerifyJWS answer's own oneof, so the
/// decoded value (boxed) goes into the answer as it is. Being the proto's oneof, a case added to
/// `VerifyJWSResponse.payload` in the proto is a case here too (and every exhaustive switch must handle it).
package typealias DecodedPayload = VerifyJWSResponse.Payload

/// Maps Apple's decoded payload JSON (Apple's App Store Server API documentation) to the proto value types, as a
/// step separate from verification, by each payload's table in `PayloadSchema`. Tolerant by design: unknown enum strings become UNSPECIFIED and reach callers in the
/// field's `<field>_raw` string, unknown enum numbers stay as unrecognized proto numbers, optional booleans keep
/// "absent" apart from false, mistyped or unknown fields are skipped, and `raw_json` always keeps the payload
/// exactly as Apple sent it, so nothing Apple adds is ever out of reach.
package enum PayloadDecoder {
    /// The typed payload of a verified result (nil unless its status is `.ok` or `.unverifiedByDesign`), with a
    /// notification's nested transaction, renewal info and app transaction filled from its verified nested
    /// payloads.
    package static func decode(_ result: VerificationResult) -> DecodedPayload? {
        guard result.isVerified || result.status == .unverifiedByDesign, let kind = result.kind,
            let raw = result.rawJSON
        else { return nil }
        // The verifier's parse of these exact bytes, when it kept one, instead of parsing them again.
        guard let object = result.payloadObject ?? JSONMembers(parsing: raw) else { return nil }
        switch kind {
        case .transaction:
            // Filled in place and moved into the answer's box (a returned local was copied field by field).
            var transaction = Transaction()
            fill(&transaction, PayloadSchema.transaction, from: object, json: raw)
            return .transaction(transaction)
        case .renewalInfo: return .renewalInfo(map(object, PayloadSchema.renewalInfo, json: raw))
        case .appTransaction: return .appTransaction(map(object, PayloadSchema.appTransaction, json: raw))
        case .realtimeRequest: return .realtimeRequest(map(object, PayloadSchema.realtimeRequest, json: raw))
        case .notification:
            var notification = map(object, PayloadSchema.notification, json: raw)
            for nested in result.nestedPayloads {
                switch decode(nested.result) {
                case .transaction(let value)?: notification.data?.transaction = value
                case .renewalInfo(let value)?: notification.data?.renewalInfo = value
                case .appTransaction(let value)?: notification.appData?.appTransaction = value
                default: break
                }
            }
            return .notification(notification)
        }
    }

    /// JWSTransactionDecodedPayload → `Transaction` (nil when `json` is not a JSON object).
    package static func transaction(fromJSON json: Data) -> Transaction? { map(json, PayloadSchema.transaction) }

    /// JWSRenewalInfoDecodedPayload → `RenewalInfo` (nil when `json` is not a JSON object).
    package static func renewalInfo(fromJSON json: Data) -> RenewalInfo? { map(json, PayloadSchema.renewalInfo) }

    /// AppTransaction payload → `AppTransaction` (nil when `json` is not a JSON object).
    package static func appTransaction(fromJSON json: Data) -> AppTransaction? {
        map(json, PayloadSchema.appTransaction)
    }

    /// DecodedRealtimeRequestBody (Retention Messaging) → `RealtimeRequest` (nil when `json` is not a JSON object).
    package static func realtimeRequest(fromJSON json: Data) -> RealtimeRequest? {
        map(json, PayloadSchema.realtimeRequest)
    }

    /// ResponseBodyV2DecodedPayload → `AppStoreNotification` (nil when `json` is not a JSON object). The
    /// nested `signed*Info` stay as JWS strings here; `decode(_:)` adds their verified decodings.
    package static func notification(fromJSON json: Data) -> AppStoreNotification? {
        map(json, PayloadSchema.notification)
    }

    /// `json` parsed and mapped by `schema` (nil when it is not a JSON object).
    private static func map<Payload: DecodedApplePayload>(_ json: Data, _ schema: [PayloadField<Payload>]) -> Payload? {
        JSONMembers(parsing: json).map { map($0, schema, json: json) }
    }

    private static func map<Payload: DecodedApplePayload>(
        _ object: JSONMembers, _ schema: [PayloadField<Payload>], json: Data
    ) -> Payload {
        var payload = Payload()
        fill(&payload, schema, from: object, json: json)
        return payload
    }

    /// `schema` applied to `object`, with `raw_json` the payload exactly as Apple sent it.
    private static func fill<Payload: DecodedApplePayload>(
        _ payload: inout Payload, _ schema: [PayloadField<Payload>], from object: JSONMembers, json: Data
    ) {
        PayloadSchema.apply(schema, from: object, to: &payload)
        payload.rawJson = String(decoding: json, as: UTF8.self)
    }
}

/// A top-level payload message: it keeps Apple's JSON in `raw_json`.
protocol DecodedApplePayload: ProtoMessage {
    var rawJson: String { get set }
}

extension Transaction: DecodedApplePayload {}
extension RenewalInfo: DecodedApplePayload {}
extension AppTransaction: DecodedApplePayload {}
extension RealtimeRequest: DecodedApplePayload {}
extension AppStoreNotification: DecodedApplePayload {}

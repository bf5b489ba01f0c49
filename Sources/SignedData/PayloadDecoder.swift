import Foundation
import GatewayCore
import ProtoCodec

/// A verified payload decoded into the gateway's proto value types: the VerifyJWS answer's own oneof, so the
/// decoded value (boxed) goes into the answer as it is. Being the proto's oneof, a case added to
/// `VerifyJWSResponse.payload` in the proto is a case here too (and every exhaustive switch must handle it).
public typealias DecodedPayload = VerifyJWSResponse.Payload

/// Maps Apple's decoded payload JSON (Apple's App Store Server API documentation) to the proto value types, as a
/// step separate from verification, by each payload's table in `PayloadSchema`. Tolerant by design: unknown enum strings become UNSPECIFIED and reach callers in the
/// field's `<field>_raw` string, unknown enum numbers stay as unrecognized proto numbers, optional booleans keep
/// "absent" apart from false, mistyped or unknown fields are skipped, and `raw_json` always keeps the payload
/// exactly as Apple sent it, so nothing Apple adds is ever out of reach.
public enum PayloadDecoder {
    /// The typed payload of a verified result (nil unless its status is `.ok` or `.unverifiedByDesign`), with a
    /// notification's nested transaction, renewal info and app transaction filled from its verified nested
    /// payloads.
    public static func decode(_ result: VerificationResult) -> DecodedPayload? {
        guard result.isVerified || result.status == .unverifiedByDesign, let kind = result.kind,
            let raw = result.rawJSON
        else { return nil }
        // The verifier's parse of these exact bytes, when it kept one, instead of parsing them again.
        guard let object = result.payloadObject ?? JSONMembers(parsing: raw) else { return nil }
        switch kind {
        case .transaction:
            // Filled in place and moved into the answer's box (a returned local was copied field by field).
            var transaction = Transaction()
            fill(&transaction, from: object, json: raw)
            return .transaction(transaction)
        case .renewalInfo: return .renewalInfo(renewalInfo(object, json: raw))
        case .appTransaction: return .appTransaction(appTransaction(object, json: raw))
        case .realtimeRequest: return .realtimeRequest(realtimeRequest(object, json: raw))
        case .notification:
            var notification = notification(object, json: raw)
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
    public static func transaction(fromJSON json: Data) -> Transaction? {
        guard let object = JSONMembers(parsing: json) else { return nil }
        var transaction = Transaction()
        fill(&transaction, from: object, json: json)
        return transaction
    }

    private static func fill(_ transaction: inout Transaction, from object: JSONMembers, json: Data) {
        PayloadSchema.apply(PayloadSchema.transaction, from: object, to: &transaction)
        transaction.rawJson = String(decoding: json, as: UTF8.self)
    }

    /// JWSRenewalInfoDecodedPayload → `RenewalInfo` (nil when `json` is not a JSON object).
    public static func renewalInfo(fromJSON json: Data) -> RenewalInfo? {
        JSONMembers(parsing: json).map { renewalInfo($0, json: json) }
    }

    private static func renewalInfo(_ object: JSONMembers, json: Data) -> RenewalInfo {
        var renewal = PayloadSchema.map(object, PayloadSchema.renewalInfo)
        renewal.rawJson = String(decoding: json, as: UTF8.self)
        return renewal
    }

    /// AppTransaction payload → `AppTransaction` (nil when `json` is not a JSON object).
    public static func appTransaction(fromJSON json: Data) -> AppTransaction? {
        JSONMembers(parsing: json).map { appTransaction($0, json: json) }
    }

    private static func appTransaction(_ object: JSONMembers, json: Data) -> AppTransaction {
        var appTransaction = PayloadSchema.map(object, PayloadSchema.appTransaction)
        appTransaction.rawJson = String(decoding: json, as: UTF8.self)
        return appTransaction
    }

    /// DecodedRealtimeRequestBody (Retention Messaging) → `RealtimeRequest` (nil when `json` is not a JSON object).
    public static func realtimeRequest(fromJSON json: Data) -> RealtimeRequest? {
        JSONMembers(parsing: json).map { realtimeRequest($0, json: json) }
    }

    private static func realtimeRequest(_ object: JSONMembers, json: Data) -> RealtimeRequest {
        var request = PayloadSchema.map(object, PayloadSchema.realtimeRequest)
        request.rawJson = String(decoding: json, as: UTF8.self)
        return request
    }

    /// ResponseBodyV2DecodedPayload → `AppStoreNotification` (nil when `json` is not a JSON object). The
    /// nested `signed*Info` stay as JWS strings here; `decode(_:)` adds their verified decodings.
    public static func notification(fromJSON json: Data) -> AppStoreNotification? {
        JSONMembers(parsing: json).map { notification($0, json: json) }
    }

    private static func notification(_ object: JSONMembers, json: Data) -> AppStoreNotification {
        var notification = PayloadSchema.map(object, PayloadSchema.notification)
        notification.rawJson = String(decoding: json, as: UTF8.self)
        return notification
    }
}

import AppStoreDomain
import Cryptography
import FoundationEssentials
import GatewayFoundation

/// Signs what the endpoints return: transactions, renewal infos and notifications, each a JWS from
/// the simulator's PKI. A signing failure becomes Apple's 5000000.
struct SignedPayloads: Sendable {
    let pki: SimulatorPKI
    let app: SimulatedApp
    let environment: AppleEnvironment
    /// Signatures made before, so a record reads back as the same bytes (nil: sign anew each time).
    var memo: SignatureMemo? = nil

    func sign(_ payload: OrderedJSON) throws(AppleRejection) -> String {
        do {
            return try memo?.sign(payload, with: pki) ?? pki.sign(payload)
        } catch {
            throw AppleRejection(5_000_000, "An unknown error occurred.")
        }
    }

    /// When a stored record is signed: when it last changed, or when the signing certificate was issued if
    /// that is later (Apple signs old records again under new certificates).
    func recordSignedDate(_ modified: Int64) -> Int64 {
        max(modified, Int64(pki.leaf.notBefore.timeIntervalSince1970 * 1000) + 1000)
    }

    func transaction(_ transaction: SimulatedTransaction, signedDate: Int64) throws(AppleRejection) -> String {
        try sign(transaction.payload(signedDate: signedDate))
    }

    func renewal(_ renewal: SimulatedRenewalInfo, signedDate: Int64) throws(AppleRejection) -> String {
        try sign(renewal.payload(signedDate: signedDate))
    }

    /// The notification's `signedPayload` (`ResponseBodyV2DecodedPayload`, in Apple's documentation), signed
    /// when it was first sent, with the transaction and renewal info as of then.
    func notification(_ notification: SimulatedNotification, customer: SimulatedCustomer?) throws(AppleRejection)
        -> String
    {
        var payload = JSONObjectBuilder()
        payload.add("notificationType", notification.notificationType)
        payload.add("subtype", notification.subtype)
        payload.add("notificationUUID", notification.notificationUUID)
        switch notification.otherPayload {
        case .summary(let summary)?:
            payload.add("summary", withApp(summary, first: [("environment", .string(environment.appleName))]))
        case .externalPurchaseToken(let token)?: payload.add("externalPurchaseToken", withApp(token, first: []))
        case .appData(let appTransaction)?:
            var appData = JSONObjectBuilder()
            appData.add("appAppleId", app.appAppleId)
            appData.add("bundleId", app.bundleId)
            appData.add("environment", environment.appleName)
            appData.add(
                "signedAppTransactionInfo",
                try sign(withApp(appTransaction, first: [("receiptType", .string(environment.appleName))])))
            payload.add("appData", appData.object)
        case nil: payload.add("data", try data(notification, customer: customer))
        }
        payload.add("version", "2.0")
        payload.add("signedDate", notification.date)
        return try sign(payload.object)
    }

    /// `object`'s members after `first`, the app's Apple id and bundle id (which the generator does not know).
    private func withApp(_ object: OrderedJSON, first: [(String, OrderedJSON)]) -> OrderedJSON {
        guard case .object(let members) = object else { return object }
        return .object(
            first + [("appAppleId", .integer(app.appAppleId)), ("bundleId", .string(app.bundleId))] + members)
    }

    private func data(_ notification: SimulatedNotification, customer: SimulatedCustomer?) throws(AppleRejection)
        -> OrderedJSON
    {
        var data = JSONObjectBuilder()
        data.add("appAppleId", app.appAppleId)
        data.add("bundleId", app.bundleId)
        data.add("bundleVersion", "1.0")
        data.add("environment", environment.appleName)
        if let customer, let id = notification.transactionId,
            let transaction = customer.transactions.first(where: { $0.transactionId == id })
        {
            data.add("signedTransactionInfo", try self.transaction(transaction, signedDate: notification.date))
            if let renewal = customer.renewals.first(where: {
                $0.originalTransactionId == transaction.originalTransactionId
            }) {
                data.add("signedRenewalInfo", try self.renewal(renewal, signedDate: notification.date))
                data.add("status", renewal.status)
            }
        }
        data.add("consumptionRequestReason", notification.consumptionRequestReason)
        return data.object
    }
}

/// Each payload signed once: the JWS of every (signing chain, payload) signed so far, so reading the same
/// history twice returns the same bytes (whether Apple's answers do is not documented: Sources/Simulator's
/// README). Bounded: past `capacity` entries it starts over
/// (a record read after that is signed anew, still valid).
final class SignatureMemo: Sendable {
    private let entries = Lock<[[UInt8]: String]>([:])
    let capacity: Int

    init(capacity: Int = 200_000) { self.capacity = capacity }

    func sign(_ payload: OrderedJSON, with pki: SimulatorPKI) throws(CryptographyError) -> String {
        let key = SHA256.hash(pki.leaf.sha256Fingerprint + payload.encoded)
        if let known = entries.withLock({ $0[key] }) { return known }
        let jws = try pki.sign(payload)
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = jws
        }
        return jws
    }
}

extension SimulatedSendAttempt {
    var json: OrderedJSON {
        .object([("attemptDate", .integer(attemptDate)), ("sendAttemptResult", .string(result))])
    }
}

/// Apple's transaction ids are decimal numbers; anything else is 4000006.
enum TransactionIdentifier {
    static func isWellFormed(_ text: String) -> Bool {
        (1...24).contains(text.utf8.count) && text.utf8.allSatisfy { (48...57).contains($0) }
    }
}

import Foundation
import GatewayFoundation
import NotificationStore
import ProtoCodec
import SignedData
import SubscriptionState

/// `state-seed DATABASE COUNT [options]`: fills the subscription state of the SQLite notification store at
/// DATABASE (created when missing) with COUNT active auto-renewable subscriptions, straight through
/// `SQLiteNotificationStore.subscriptions` (the reducer and the tables the gateway uses), so a benchmark need not
/// deliver a million notifications through the webhook. For bench/subscription_state.sh; not part of the gateway.
///
/// Each subscription is one record (`originalTransactionId` FIRST_ID + i) with a ledger of TRANSACTIONS snapshots
/// (a purchase, then monthly renewals; the current one expires 1–30 days from now, so every read is answered
/// from the state without asking Apple) and a renewal info (auto-renew on). The snapshots look like Apple's: the
/// JWS header (with its `x5c` chain) is HEADER_FROM's, the payload Apple's JSON fields, the signature 64 random
/// bytes. They are never verified again on read, so they need not verify; the decoded payloads are made from the
/// same JSON by the gateway's own decoder (`PayloadDecoder`). Ids, dates and tokens come from a fixed seed, so
/// two runs with the same arguments write the same state.
///
///     state-seed DATABASE COUNT [--bundle-id com.example.app] [--environment Sandbox]
///         [--first-id 2100000000000000] [--transactions 1] [--header-from JWS_FILE] [--batch 5000]
///
/// Prints the records stored, the file's size and the seconds it took.
@main
struct StateSeed {
    struct Options {
        var database = ""
        var count = 0
        var bundleId = "com.example.app"
        var environment = "Sandbox"
        var firstId: Int64 = 2_100_000_000_000_000
        var transactions = 1
        var headerFrom: String?
        var batch = 5_000
    }

    static func main() async {
        let options = parse(Array(CommandLine.arguments.dropFirst()))
        do {
            try await seed(options)
        } catch {
            fail("\(error)")
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("state-seed: \(message)\n".utf8))
        exit(1)
    }

    static func parse(_ arguments: [String]) -> Options {
        let usage =
            "usage: state-seed DATABASE COUNT [--bundle-id ID] [--environment Sandbox|Production] [--first-id N] "
            + "[--transactions N] [--header-from JWS_FILE] [--batch N]"
        var options = Options()
        var positional: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--") else {
                positional.append(argument)
                index += 1
                continue
            }
            guard index + 1 < arguments.count else { fail(usage) }
            let value = arguments[index + 1]
            switch argument {
            case "--bundle-id": options.bundleId = value
            case "--environment": options.environment = value
            case "--first-id": options.firstId = Int64(value) ?? 0
            case "--transactions": options.transactions = Int(value) ?? 0
            case "--header-from": options.headerFrom = value
            case "--batch": options.batch = Int(value) ?? 0
            default: fail(usage)
            }
            index += 2
        }
        guard positional.count == 2, let count = Int(positional[1]), count >= 0, options.firstId > 0,
            (1...1_000).contains(options.transactions), options.batch > 0,
            ["Sandbox", "Production"].contains(options.environment)
        else { fail(usage) }
        options.database = positional[0]
        options.count = count
        return options
    }

    static func seed(_ options: Options) async throws {
        let header: String
        if let path = options.headerFrom {
            let jws = try String(contentsOfFile: path, encoding: .utf8)
            guard let first = jws.split(separator: ".").first, !first.isEmpty else { fail("\(path) holds no JWS") }
            header = String(first)
        } else {
            header = Base64URL.encode(Array(#"{"alg":"ES256","x5c":[]}"#.utf8))
        }
        let store = try SQLiteNotificationStore(path: options.database)
        let started = Date()
        let now = Int64(started.timeIntervalSince1970 * 1000)
        var random = SplitMix64(seed: 0x5eed_0046)
        var made = Snapshots(options: options, header: header, now: now)
        var stored = 0
        while stored < options.count {
            let size = min(options.batch, options.count - stored)
            var changes: [SubscriptionChange] = []
            changes.reserveCapacity(size * options.transactions)
            for index in stored..<stored + size {
                changes += try made.subscription(index, random: &random)
            }
            let applied = try await store.subscriptions.apply(changes, projectedThrough: nil)
            guard applied.allSatisfy({ $0.record != nil }) else { fail("a change was not filed as a subscription") }
            stored += size
            if stored % 100_000 == 0 || stored == options.count {
                let seconds = Date().timeIntervalSince(started)
                FileHandle.standardError.write(
                    Data(String(format: "state-seed: %d records, %.0f s\n", stored, seconds).utf8))
            }
        }
        let records = try await store.subscriptions.recordCount()
        // The file and its write-ahead log (what is not checkpointed yet), by stat(2).
        let bytes = [options.database, options.database + "-wal"].reduce(Int64(0)) { total, path in
            var info = stat()
            return total + (stat(path, &info) == 0 ? Int64(info.st_size) : 0)
        }
        // %ld: the counts are 64-bit (%d printed a 2 GiB store's bytes wrapped negative).
        print(
            String(
                format: "records %ld bytes %ld seconds %.1f", records, bytes, Date().timeIntervalSince(started)))
    }
}

/// The signed-looking snapshots of subscription `index`.
struct Snapshots {
    let options: Options
    let header: String
    let now: Int64
    static let day: Int64 = 86_400_000
    static let period: Int64 = 30 * day
    static let products = ["premium.monthly", "premium.yearly", "pro.monthly"]
    static let storefronts = [
        ("USA", "143441", "USD", 9990), ("GBR", "143444", "GBP", 8990), ("DEU", "143443", "EUR", 9990),
    ]

    typealias Options = StateSeed.Options

    init(options: Options, header: String, now: Int64) {
        self.options = options
        self.header = header
        self.now = now
    }

    /// The changes that make subscription `index`: each transaction of its ledger (oldest first), the renewal
    /// info with the newest.
    mutating func subscription(_ index: Int, random: inout SplitMix64) throws -> [SubscriptionChange] {
        let original = options.firstId + Int64(index)
        let product = "\(options.bundleId).\(Self.products[index % Self.products.count])"
        let (storefront, storefrontId, currency, price) = Self.storefronts[index % Self.storefronts.count]
        let token = random.uuid()
        let appTransactionId = 704_000_000_000_000_000 + Int64(index)
        // The current period started 0–29 days ago and ends 1–30 days from now; earlier ones are a period apart.
        let currentStart = now - Int64(random.next() % UInt64(29 * Self.day))
        let count = options.transactions
        let firstStart = currentStart - Int64(count - 1) * Self.period
        var changes: [SubscriptionChange] = []
        for step in 0..<count {
            let start = firstStart + Int64(step) * Self.period
            let transactionId =
                step == 0 ? original : options.firstId + 200_000_000_000_000 + Int64(index) * 1_000 + Int64(step)
            let signed = start + 1_000 + Int64(random.next() % 4_000)
            let json = """
                {"transactionId":"\(transactionId)","originalTransactionId":"\(original)",\
                "webOrderLineItemId":"\(original + 100_000_000_000_000 + Int64(step))","bundleId":"\(options.bundleId)",\
                "productId":"\(product)","subscriptionGroupIdentifier":"21000001","purchaseDate":\(start),\
                "originalPurchaseDate":\(firstStart),"expiresDate":\(start + Self.period),"quantity":1,\
                "type":"Auto-Renewable Subscription","appAccountToken":"\(token)","inAppOwnershipType":"PURCHASED",\
                "signedDate":\(signed),"environment":"\(options.environment)",\
                "transactionReason":"\(step == 0 ? "PURCHASE" : "RENEWAL")","storefront":"\(storefront)",\
                "storefrontId":"\(storefrontId)","price":\(price),"currency":"\(currency)",\
                "appTransactionId":"\(appTransactionId)"}
                """
            guard let payload = PayloadDecoder.transaction(fromJSON: Data(json.utf8)) else {
                StateSeed.fail("the transaction JSON does not decode: \(json)")
            }
            let transaction = SignedTransaction(jws: jws(json, &random), payload: payload)
            var renewal: SignedRenewalInfo?
            if step == count - 1 {
                let renewalJSON = """
                    {"originalTransactionId":"\(original)","autoRenewProductId":"\(product)","productId":"\(product)",\
                    "autoRenewStatus":1,"signedDate":\(signed),"environment":"\(options.environment)",\
                    "recentSubscriptionStartDate":\(firstStart),"renewalDate":\(start + Self.period),\
                    "renewalPrice":\(price),"currency":"\(currency)","appAccountToken":"\(token)",\
                    "appTransactionId":"\(appTransactionId)","eligibleWinBackOfferIds":[]}
                    """
                guard let info = PayloadDecoder.renewalInfo(fromJSON: Data(renewalJSON.utf8)) else {
                    StateSeed.fail("the renewal JSON does not decode: \(renewalJSON)")
                }
                renewal = SignedRenewalInfo(jws: jws(renewalJSON, &random), payload: info)
            }
            changes.append(
                try SubscriptionChange(
                    transaction: transaction, renewalInfo: renewal, source: .notification, nowMillis: signed + 200))
        }
        return changes
    }

    /// HEADER.base64url(json).64 random bytes: shaped like Apple's compact JWS, not verifiable.
    func jws(_ json: String, _ random: inout SplitMix64) -> String {
        var signature: [UInt8] = []
        signature.reserveCapacity(64)
        for _ in 0..<8 {
            var word = random.next()
            for _ in 0..<8 {
                signature.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return header + "." + Base64URL.encode(Array(json.utf8)) + "." + Base64URL.encode(signature)
    }
}

/// The seed's draws (SplitMix64): the same seed, the same state.
extension SplitMix64 {
    /// A lowercase version-4 UUID.
    mutating func uuid() -> String {
        let high = next()
        let low = next()
        let hex = String(format: "%016llx%016llx", high, low)
        let characters = Array(hex)
        var text = String(characters[0..<8]) + "-" + String(characters[8..<12]) + "-4" + String(characters[13..<16])
        text += "-" + ["8", "9", "a", "b"][Int(low >> 62)] + String(characters[17..<20]) + "-"
        text += String(characters[20..<32])
        return text
    }
}

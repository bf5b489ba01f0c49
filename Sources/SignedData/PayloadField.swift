import GatewayFoundation
import ProtoCodec

/// One field of an Apple payload as the gateway maps it: the JSON member's name, its kind (the constructor
/// that made it) and where its value lands in `Message`. A payload's table of these (`PayloadSchema`) is the
/// single description of that payload; `PayloadDecoder` applies it, and tests check the simulator's payloads
/// against it.
///
/// Reads are forgiving: a missing or mistyped member leaves the proto default, so applying a field to an
/// absent member changes nothing.
struct PayloadField<Message>: Sendable {
    /// The JSON member's name.
    let name: String
    /// The kind of value Apple sends there.
    let kind: PayloadFieldKind
    /// Writes the member's value (nil: absent) into the message.
    let apply: @Sendable (inout Message, JSONValue?) -> Void

    /// A string; ids sent as numbers (some older payloads) are kept as their decimal text.
    static func string(_ name: String, _ set: @escaping @Sendable (inout Message, String) -> Void) -> Self {
        Self(name: name, kind: .string) { message, value in set(&message, PayloadValue.string(value)) }
    }

    /// An array of strings (other elements skipped).
    static func strings(_ name: String, _ set: @escaping @Sendable (inout Message, [String]) -> Void) -> Self {
        Self(name: name, kind: .strings) { message, value in set(&message, PayloadValue.strings(value)) }
    }

    /// An integer (0 when absent or not an integer).
    static func int64(_ name: String, _ set: @escaping @Sendable (inout Message, Int64) -> Void) -> Self {
        Self(name: name, kind: .integer) { message, value in set(&message, value?.int64 ?? 0) }
    }

    /// An integer that fits 32 bits (0 when absent, not an integer or out of range).
    static func int32(_ name: String, _ set: @escaping @Sendable (inout Message, Int32) -> Void) -> Self {
        Self(name: name, kind: .integer) { message, value in
            set(&message, value?.int64.flatMap { Int32(exactly: $0) } ?? 0)
        }
    }

    /// Milliseconds since 1970 (`PayloadValue.milliseconds`): the Timestamp (clamped to its range; nil when
    /// absent or not a number) and the exact milliseconds beside it (0 when absent).
    static func date(
        _ name: String, _ set: @escaping @Sendable (inout Message, ProtoTimestamp?, Int64) -> Void
    ) -> Self {
        Self(name: name, kind: .date) { message, value in
            let milliseconds = PayloadValue.milliseconds(value)
            set(&message, milliseconds.map(PayloadValue.timestamp), milliseconds ?? 0)
        }
    }

    /// A boolean Apple sends only sometimes: nil when absent (or not a boolean).
    static func optionalBool(
        _ name: String, _ set: @escaping @Sendable (inout Message, ProtoBoolValue?) -> Void
    ) -> Self {
        Self(name: name, kind: .bool) { message, value in
            guard case .bool(let flag)? = value else { return set(&message, nil) }
            set(&message, ProtoBoolValue(value: flag))
        }
    }

    /// Apple's number + `offset` as the proto number (absent or out of range: 0 = UNSPECIFIED; an unknown
    /// Apple number stays an unrecognized proto number).
    static func number<Value: OpenProtoEnum>(
        _ name: String, offset: Int32, _ set: @escaping @Sendable (inout Message, Value) -> Void
    ) -> Self {
        Self(name: name, kind: .number) { message, value in
            set(&message, Value(rawValue: PayloadValue.number(value, offset: offset)))
        }
    }

    /// A string enum: the proto value through `vocabulary` (UNSPECIFIED when absent or unknown) and the string
    /// exactly as Apple sent it (empty when absent or not a string), so an unknown value still reaches callers.
    static func enumeration<Value: OpenProtoEnum>(
        _ name: String, _ vocabulary: PayloadVocabulary,
        _ set: @escaping @Sendable (inout Message, Value, String) -> Void
    ) -> Self {
        Self(name: name, kind: .enumeration(vocabulary)) { message, value in
            let raw = value?.string ?? ""
            set(&message, Value(rawValue: vocabulary.numbers[raw] ?? 0), raw)
        }
    }

    /// A nested object mapped by its own table (nil when absent or not an object).
    static func object<Nested: ProtoMessage>(
        _ name: String, _ fields: [PayloadField<Nested>], _ set: @escaping @Sendable (inout Message, Nested) -> Void
    ) -> Self {
        Self(name: name, kind: .object) { message, value in
            guard let members = value?.object else { return }
            set(&message, PayloadSchema.map(members, fields))
        }
    }

    /// An array of nested objects, each mapped by its own table (other elements skipped; the JWS length bounds
    /// how many there can be).
    static func objects<Nested: ProtoMessage>(
        _ name: String, _ fields: [PayloadField<Nested>],
        _ set: @escaping @Sendable (inout Message, [Nested]) -> Void
    ) -> Self {
        Self(name: name, kind: .objects) { message, value in
            guard case .array(let values)? = value else { return set(&message, []) }
            set(&message, values.compactMap(\.object).map { PayloadSchema.map($0, fields) })
        }
    }

    /// A field read by hand (`read` gets the member's value, nil when absent).
    static func custom(
        _ name: String, _ kind: PayloadFieldKind, _ read: @escaping @Sendable (inout Message, JSONValue?) -> Void
    ) -> Self {
        Self(name: name, kind: kind, apply: read)
    }
}

/// What kind of JSON value Apple sends in a payload field.
enum PayloadFieldKind: Sendable, Equatable {
    /// A string (an id may come as a number).
    case string
    /// An array of strings.
    case strings
    /// An integer.
    case integer
    /// Milliseconds since 1970 (an integer; Xcode writes fractions).
    case date
    /// A boolean.
    case bool
    /// An integer enum (Apple's numbers).
    case number
    /// A string enum with these spellings.
    case enumeration(PayloadVocabulary)
    /// A nested object.
    case object
    /// An array of nested objects.
    case objects
    /// Any JSON, kept as its text.
    case json
}

/// The forgiving reads of one JSON value: a missing or mistyped value reads as the proto default.
enum PayloadValue {
    /// Strings; numbers as their decimal text.
    static func string(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: text
        case .integer(let number)?: String(number)
        default: ""
        }
    }

    /// The strings of an array (other elements skipped); the JWS length bounds how many there can be.
    static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let values)? = value else { return [] }
        return values.compactMap(\.string)
    }

    /// A date member as Apple's libraries read it, in whole milliseconds since 1970: an integer exactly; any
    /// other JSON number truncated toward zero, as Apple's Python library does (Xcode writes fractions such as
    /// `1697679936056.485`; `1.6e12` is read too); a number past int64 (`1e300`, or `1e999`, which parses as
    /// infinity) saturated to int64's bounds. nil when absent or not a number (JSON has no NaN).
    static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let milliseconds)?: milliseconds
        case .number(let milliseconds)?: Int64(saturating: milliseconds)
        default: nil
        }
    }

    /// The first and last milliseconds a `google.protobuf.Timestamp` holds (0001-01-01 to 9999-12-31).
    static let timestampRange: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    /// Milliseconds since 1970 → Timestamp, clamped to the Timestamp's range (Xcode dates an app transaction's
    /// `originalPurchaseDate` before year 1); the `<field>_millis` beside it keeps the exact value.
    static func timestamp(_ milliseconds: Int64) -> ProtoTimestamp {
        ProtoTimestamp(unixMilliseconds: min(max(milliseconds, timestampRange.lowerBound), timestampRange.upperBound))
    }

    /// Apple's number + `offset`; 0 when absent, negative or out of range.
    static func number(_ value: JSONValue?, offset: Int32) -> Int32 {
        guard let value = value?.int64, let apple = Int32(exactly: value), apple >= 0, apple < Int32.max - offset
        else { return 0 }
        return apple + offset
    }

    /// The value as JSON text ("" when absent or null).
    static func jsonText(_ value: JSONValue?) -> String { value.map { $0 == .null ? "" : $0.jsonText } ?? "" }
}

/// A generated proto enum: every Int32 is a value (unknown numbers are kept as `.unrecognized`).
protocol OpenProtoEnum: Sendable { init(rawValue: Int32) }

extension Environment: OpenProtoEnum {}
extension ProductType: OpenProtoEnum {}
extension InAppOwnershipType: OpenProtoEnum {}
extension TransactionReason: OpenProtoEnum {}
extension OfferDiscountType: OpenProtoEnum {}
extension RevocationType: OpenProtoEnum {}
extension BillingPlanType: OpenProtoEnum {}
extension OriginalPlatform: OpenProtoEnum {}
extension ConsumptionRequestReason: OpenProtoEnum {}
extension NotificationType: OpenProtoEnum {}
extension NotificationSubtype: OpenProtoEnum {}
extension RevocationReason: OpenProtoEnum {}
extension OfferType: OpenProtoEnum {}
extension AutoRenewStatus: OpenProtoEnum {}
extension ExpirationIntent: OpenProtoEnum {}
extension PriceIncreaseStatus: OpenProtoEnum {}
extension SubscriptionStatus: OpenProtoEnum {}

import Testing

@testable import SignedData
@testable import Simulator

/// The simulator writes Apple's payloads from its own records, and the gateway reads them by `PayloadSchema`:
/// every member the simulator writes must be one the schema names, of the kind the schema expects, so the
/// simulated data exercises the decoder's tables rather than slipping past them.
@Suite struct PayloadSchemaAgreementTests {
    @Test func simulatedTransactionsAndRenewalsUseOnlySchemaFieldsOfTheirKinds() {
        let dataset = SimulatorFixture(customers: 80).dataset
        var checked = 0
        // Customer 0's history carries every shape Apple sends (`ShapeShowcase`).
        for customer in dataset.customers {
            for transaction in customer.transactions {
                checked += Self.check(transaction.payload(signedDate: 1), PayloadSchema.transaction, "transaction")
            }
            for renewal in customer.renewals {
                checked += Self.check(renewal.payload(signedDate: 1), PayloadSchema.renewalInfo, "renewal info")
            }
        }
        #expect(checked > 1_000)
    }

    @Test func simulatedNotificationSpellingsAreInTheDecodersVocabularies() {
        for shape in HistoryGenerator.notificationShapes {
            #expect(PayloadVocabulary.notificationType.spellings.contains(shape.type), "\(shape.type)")
            if let subtype = shape.subtype {
                #expect(PayloadVocabulary.notificationSubtype.spellings.contains(subtype), "\(subtype)")
            }
        }
        for reason in HistoryGenerator.consumptionReasons {
            #expect(PayloadVocabulary.consumptionRequestReason.spellings.contains(reason), "\(reason)")
        }
    }

    /// Records an issue for each member of `payload` the schema does not name or expects of another kind;
    /// returns how many members were checked.
    static func check<Message>(_ payload: OrderedJSON, _ schema: [PayloadField<Message>], _ what: String) -> Int {
        guard case .object(let members) = payload else {
            Issue.record("a simulated \(what) is not an object")
            return 0
        }
        let kinds = Dictionary(schema.map { ($0.name, $0.kind) }, uniquingKeysWith: { first, _ in first })
        for (name, value) in members {
            guard let kind = kinds[name] else {
                Issue.record("the simulator writes \(what).\(name), which PayloadSchema does not name")
                continue
            }
            #expect(matches(value, kind), "\(what).\(name) = \(value.encodedText) is not a \(kind)")
        }
        return members.count
    }

    static func matches(_ value: OrderedJSON, _ kind: PayloadFieldKind) -> Bool {
        switch (kind, value) {
        case (.string, .string), (.integer, .integer), (.date, .integer), (.number, .integer), (.bool, .bool),
            (.object, .object), (.json, _):
            true
        case (.strings, .array(let elements)):
            elements.allSatisfy { if case .string = $0 { true } else { false } }
        case (.objects, .array(let elements)):
            elements.allSatisfy { if case .object = $0 { true } else { false } }
        case (.enumeration(let vocabulary), .string(let spelling)):
            vocabulary.spellings.contains(spelling)
        default:
            false
        }
    }
}

import Cryptography
import Foundation
import GatewayFoundation

/// Finds a transaction id in a legacy StoreKit 1 receipt, as Apple's server libraries do, so a client that still
/// has only a receipt can call the App Store Server API. Nothing is verified: the id is only good for asking Apple.
///
/// - App receipt: base64 of a PKCS#7 SignedData (parsed by OpenSSL's CMS parser) whose content is a DER SET of
///   receipt attributes `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`; the value of type 17 is
///   an in-app purchase, itself such a SET, whose type 1703 (transaction id) or 1705 (original transaction id)
///   holds the id as a DER string. Xcode wraps the content in one more OCTET STRING, which is unwrapped.
/// - Transaction receipt: base64 of an old-style property list text whose `"purchase-info"` is base64 of another
///   one holding `"transaction-id"`.
package enum ReceiptTransactionID {
    /// Why a receipt was refused.
    package struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// Largest receipt accepted, in base64 characters.
    package static let maxReceiptCharacters = 4_000_000

    private static let inAppPurchase: Int64 = 17
    private static let transactionIdentifier: Int64 = 1703
    private static let originalTransactionIdentifier: Int64 = 1705

    /// The first transaction or original transaction id of the first in-app purchase that has one; nil when the
    /// receipt has no in-app purchase.
    package static func fromAppReceipt(_ receipt: String) throws(Failure) -> String? {
        let der = try decodeBase64(receipt)
        var content: [UInt8]
        do {
            content = try SignedDataEnvelope.content(ofDER: der)
        } catch {
            throw Failure("the receipt is not a PKCS#7 SignedData with content")
        }
        if content.first == DERReader.octetString {
            var wrapper = DERReader(content[...])
            content = Array(try wrapper.element(DERReader.octetString))
        }
        var top = DERReader(content[...])
        var attributes = DERReader(try top.element(DERReader.set))
        while !attributes.isAtEnd {
            let (type, value) = try attribute(&attributes)
            guard type == inAppPurchase else { continue }
            var purchase = DERReader(value)
            var fields = DERReader(try purchase.element(DERReader.set))
            while !fields.isAtEnd {
                let (field, fieldValue) = try attribute(&fields)
                if field == transactionIdentifier || field == originalTransactionIdentifier {
                    return try string(fieldValue)
                }
            }
        }
        return nil
    }

    /// The `"transaction-id"` of a transaction receipt; nil when it has none.
    package static func fromTransactionReceipt(_ receipt: String) throws(Failure) -> String? {
        guard let outer = String(validating: try decodeBase64(receipt), as: UTF8.self) else {
            throw Failure("the transaction receipt is not base64 of UTF-8 text")
        }
        guard let purchaseInfo = value(of: "purchase-info", in: outer) else { return nil }
        guard let inner = String(validating: try decodeBase64(purchaseInfo), as: UTF8.self) else {
            throw Failure("the receipt's purchase-info is not base64 of UTF-8 text")
        }
        return value(of: "transaction-id", in: inner)
    }

    /// The value of `"key" = "value";` (whitespace around `=`; the value base64 characters only).
    static func value(of key: String, in text: String) -> String? {
        var rest = Substring(text)
        let quotedKey = "\"" + key + "\""
        while let start = rest.range(of: quotedKey) {
            rest = rest[start.upperBound...]
            // Index comparisons, not counts: a receipt packed with the key must cost linear time.
            var cursor = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            guard cursor.startIndex != rest.startIndex, cursor.first == "=" else { continue }
            cursor = cursor.dropFirst()
            let afterEquals = cursor.startIndex
            cursor = cursor.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            guard cursor.startIndex != afterEquals, cursor.first == "\"" else { continue }
            cursor = cursor.dropFirst()
            let value = cursor.prefix {
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/" || $0 == "=")
            }
            guard !value.isEmpty, cursor.dropFirst(value.count).hasPrefix("\";") else { continue }
            return String(value)
        }
        return nil
    }

    private static func decodeBase64(_ text: String) throws(Failure) -> [UInt8] {
        guard text.utf8.count <= maxReceiptCharacters else {
            throw Failure("the receipt is longer than \(maxReceiptCharacters) characters")
        }
        guard let bytes = Base64.decode(text, variant: .standard) else { throw Failure("the receipt is not base64") }
        return bytes
    }

    /// One `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` of a receipt attribute SET.
    private static func attribute(_ reader: inout DERReader) throws(Failure) -> (Int64, ArraySlice<UInt8>) {
        var sequence = DERReader(try reader.element(DERReader.sequence))
        let type = try sequence.integer()
        _ = try sequence.integer()
        return (type, try sequence.element(DERReader.octetString))
    }

    /// A DER UTF8String or IA5String as text.
    private static func string(_ bytes: ArraySlice<UInt8>) throws(Failure) -> String {
        var reader = DERReader(bytes)
        let (tag, value) = try reader.next()
        guard tag == 0x0C || tag == 0x16, let text = String(validating: value, as: UTF8.self) else {
            throw Failure("a receipt id is not a DER UTF8String or IA5String")
        }
        return text
    }
}

/// A bounds-checked reader of DER definite-length TLVs (X.690 §8.1): no recursion, no allocation.
struct DERReader {
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
    static let octetString: UInt8 = 0x04
    static let integerTag: UInt8 = 0x02

    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { bytes.isEmpty }

    /// The next TLV's tag and value.
    mutating func next() throws(ReceiptTransactionID.Failure) -> (tag: UInt8, value: ArraySlice<UInt8>) {
        guard bytes.count >= 2 else { throw .init("a receipt element is truncated") }
        let tag = bytes[bytes.startIndex]
        let first = bytes[bytes.startIndex + 1]
        var index = bytes.startIndex + 2
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            // 0x80 is BER's indefinite length, not DER; more than 4 length bytes is beyond any receipt.
            guard (1...4).contains(count), bytes.endIndex - index >= count else {
                throw .init("a receipt element has an invalid length")
            }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length <= bytes.endIndex - index else { throw .init("a receipt element is longer than its container") }
        let value = bytes[index..<(index + length)]
        bytes = bytes[(index + length)...]
        return (tag, value)
    }

    /// The next TLV's value, which must have `tag`.
    mutating func element(_ tag: UInt8) throws(ReceiptTransactionID.Failure) -> ArraySlice<UInt8> {
        let (found, value) = try next()
        guard found == tag else { throw .init("a receipt element has tag \(found), expected \(tag)") }
        return value
    }

    /// The next TLV as an INTEGER of at most 8 bytes.
    mutating func integer() throws(ReceiptTransactionID.Failure) -> Int64 {
        let value = try element(Self.integerTag)
        guard (1...8).contains(value.count) else { throw .init("a receipt integer has \(value.count) bytes") }
        var number: Int64 = value.first.map { $0 & 0x80 != 0 ? -1 : 0 } ?? 0
        for byte in value { number = number << 8 | Int64(byte) }
        return number
    }
}

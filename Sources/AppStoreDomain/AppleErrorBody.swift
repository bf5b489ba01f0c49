import Foundation
import GatewayFoundation

/// Apple's error body `{"errorCode": <int64>, "errorMessage": "<text>"}` (Apple's App Store Server API documentation).
package struct AppleErrorBody: Sendable, Hashable {
    /// The numeric code, known or not.
    package var code: AppleErrorCode
    /// Apple's human-readable text, when present.
    package var message: String?

    /// A body with a code and optional message.
    package init(code: AppleErrorCode, message: String? = nil) {
        self.code = code
        self.message = message
    }

    /// Reads an error body, tolerantly: a content type other than `application/json`, a body that is
    /// not a JSON object, or one without an integer `errorCode` all give nil (401s and wrong-host 404s
    /// carry no JSON). A missing content type is accepted when the bytes parse.
    package static func parse(_ body: [UInt8], contentType: String?) -> AppleErrorBody? {
        if let contentType, !isJSON(contentType) { return nil }
        guard !body.isEmpty, body.count <= 64 * 1024 else { return nil }
        guard let object = JSONValue.object(from: body) else { return nil }
        // Tolerate a code sent as a string of digits; ignore a message that is not a string.
        let code = object["errorCode"]?.int64 ?? object["errorCode"]?.string.flatMap { Int64($0) }
        guard let code else { return nil }
        return AppleErrorBody(code: AppleErrorCode(rawValue: code), message: object["errorMessage"]?.string)
    }

    /// `application/json` with or without parameters, in any letter case.
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }
}

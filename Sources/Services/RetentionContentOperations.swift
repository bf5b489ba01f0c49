import AppStoreClient
import AppStoreDomain
import GatewayFoundation
import ProtoCodec

/// The Retention Messaging API's images and messages: Upload / Delete Image, Get Image List, Upload / Delete
/// Message, Get Message List. Every identifier is a UUID, sent in lowercase as Apple's libraries send it; images
/// and texts are checked against Apple's documented limits (`RetentionMessagingLimits`) before any call.
extension AppleOperation where Request == UploadImageRequest, Response == UploadImageResponse {
    static var uploadImage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.uuid(request.imageIdentifier, field: "image_identifier", required: true)
            let size: RetentionMessagingLimits.ImageSize
            var query = ""
            switch request.imageSize {
            case .unspecified: size = .fullSize
            case .fullSize: size = .fullSize; query = "imageSize=FULL_SIZE"
            case .bulletPoint: size = .bulletPoint; query = "imageSize=BULLET_POINT"
            case .unrecognized(let value):
                size = .fullSize
                contract.refuse("image_size", "unknown RetentionImageSize \(value)")
            }
            if request.image.isEmpty {
                contract.refuse("image", "is required (a PNG file)")
            } else if let problem = RetentionMessagingLimits.imageProblem(request.image, size: size) {
                contract.refuse("image", problem)
            }
            try contract.check()
            return AppleRequest(
                .uploadImage, pathValues: [request.imageIdentifier.lowercased()], query: query, body: request.image,
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            UploadImageResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == DeleteImageRequest, Response == DeleteImageResponse {
    static var deleteImage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.uuid(request.imageIdentifier, field: "image_identifier", required: true)
            try contract.check()
            return AppleRequest(
                .deleteImage, pathValues: [request.imageIdentifier.lowercased()],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            DeleteImageResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == GetImageListRequest, Response == GetImageListResponse {
    static var getImageList: Self {
        Self(app: \.app) { request throws(GatewayError) in
            AppleRequest(.getImageList, environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(ImageListWire.self, what: "image list")
            return GetImageListResponse(
                environment: answer.environment,
                images: wire.items.map { item in
                    RetentionImage(
                        imageIdentifier: item.identifier, state: RetentionReviewState(apple: item.state),
                        stateRaw: item.state, size: RetentionImageSize(apple: item.size), sizeRaw: item.size)
                })
        }
    }
}

extension AppleOperation where Request == UploadMessageRequest, Response == UploadMessageResponse {
    static var uploadMessage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            try request.checkContract()
            return AppleRequest(
                .uploadMessage, pathValues: [request.messageIdentifier.lowercased()],
                body: AppleJSONBody.encode(request.appleBody), environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            UploadMessageResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == DeleteMessageRequest, Response == DeleteMessageResponse {
    static var deleteMessage: Self {
        Self(app: \.app) { request throws(GatewayError) in
            var contract = RequestContract()
            contract.uuid(request.messageIdentifier, field: "message_identifier", required: true)
            try contract.check()
            return AppleRequest(
                .deleteMessage, pathValues: [request.messageIdentifier.lowercased()],
                environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            DeleteMessageResponse(environment: answer.environment)
        }
    }
}

extension AppleOperation where Request == GetMessageListRequest, Response == GetMessageListResponse {
    static var getMessageList: Self {
        Self(app: \.app) { request throws(GatewayError) in
            AppleRequest(.getMessageList, environment: try request.environment.requested())
        } answer: { answer throws(GatewayError) in
            let wire = try answer.decoded(MessageListWire.self, what: "message list")
            return GetMessageListResponse(
                environment: answer.environment,
                messages: wire.items.map { item in
                    RetentionMessageItem(
                        messageIdentifier: item.identifier, state: RetentionReviewState(apple: item.state),
                        stateRaw: item.state)
                })
        }
    }
}

extension UploadMessageRequest {
    /// The contract: a UUID, Apple's text limits, at most 5 bullet points, ABOVE_IMAGE only with an image.
    func checkContract() throws(GatewayError) {
        typealias Limits = RetentionMessagingLimits
        var contract = RequestContract()
        contract.uuid(messageIdentifier, field: "message_identifier", required: true)
        contract.text(header, field: "header", max: Limits.headerCharacters, required: true)
        contract.text(body, field: "body", max: Limits.bodyCharacters, required: true)
        if let image {
            contract.uuid(image.imageIdentifier, field: "image.image_identifier", required: true)
            contract.text(image.altText, field: "image.alt_text", max: Limits.altTextCharacters, required: true)
        }
        switch headerPosition {
        case .unspecified, .aboveBody: break
        case .aboveImage:
            if image == nil { contract.refuse("header_position", "ABOVE_IMAGE needs an image") }
        case .unrecognized(let value): contract.refuse("header_position", "unknown RetentionHeaderPosition \(value)")
        }
        if bulletPoints.count > Limits.bulletPoints {
            contract.refuse(
                "bullet_points", "must hold at most \(Limits.bulletPoints) values (got \(bulletPoints.count))")
        } else {
            for (index, point) in bulletPoints.enumerated() {
                let field = "bullet_points[\(index)]"
                contract.text(point.text, field: "\(field).text", max: Limits.bulletPointTextCharacters, required: true)
                contract.uuid(point.imageIdentifier, field: "\(field).image_identifier", required: true)
                contract.text(point.altText, field: "\(field).alt_text", max: Limits.altTextCharacters, required: true)
            }
        }
        try contract.check()
    }

    /// Apple's UploadMessageRequestBody.
    var appleBody: [String: AppleJSONBody.Value] {
        var members: [String: AppleJSONBody.Value] = ["header": .string(header), "body": .string(body)]
        if let image {
            members["image"] = .object([
                "imageIdentifier": .string(image.imageIdentifier.lowercased()), "altText": .string(image.altText),
            ])
        }
        switch headerPosition {
        case .aboveBody: members["headerPosition"] = .string("ABOVE_BODY")
        case .aboveImage: members["headerPosition"] = .string("ABOVE_IMAGE")
        default: break
        }
        if !bulletPoints.isEmpty {
            members["bulletPoints"] = .objects(
                bulletPoints.map { point in
                    [
                        "text": .string(point.text), "imageIdentifier": .string(point.imageIdentifier.lowercased()),
                        "altText": .string(point.altText),
                    ]
                })
        }
        return members
    }
}

extension RetentionReviewState {
    /// Apple's `imageState` / `messageState`; unknown values are UNSPECIFIED (the raw value is kept beside).
    init(apple: String) {
        switch apple {
        case "PENDING": self = .pending
        case "APPROVED": self = .approved
        case "REJECTED": self = .rejected
        default: self = .unspecified
        }
    }
}

extension RetentionImageSize {
    /// Apple's `imageSize`; unknown values are UNSPECIFIED.
    init(apple: String) {
        switch apple {
        case "FULL_SIZE": self = .fullSize
        case "BULLET_POINT": self = .bulletPoint
        default: self = .unspecified
        }
    }
}

/// GetImageListResponse on the wire.
private struct ImageListWire: AppleJSONShape {
    struct Item {
        var identifier: String
        var state: String
        var size: String
    }

    var items: [Item]

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        items = []
        for item in try object.objects("imageIdentifiers") ?? [] {
            items.append(
                Item(
                    identifier: try item.string("imageIdentifier") ?? "", state: try item.string("imageState") ?? "",
                    size: try item.string("imageSize") ?? ""))
        }
    }
}

/// GetMessageListResponse on the wire.
private struct MessageListWire: AppleJSONShape {
    struct Item {
        var identifier: String
        var state: String
    }

    var items: [Item]

    init(_ object: JSONObject) throws(JSONFieldMismatch) {
        items = []
        for item in try object.objects("messageIdentifiers") ?? [] {
            items.append(
                Item(
                    identifier: try item.string("messageIdentifier") ?? "",
                    state: try item.string("messageState") ?? ""))
        }
    }
}

/// The Retention Messaging API's documented limits, checked by the gateway before a request reaches Apple and
/// enforced by the simulator the way Apple does (docs/app-store-api.md, "Retention Messaging API").
package enum RetentionMessagingLimits {
    /// Characters (Unicode scalars) of a message's header (HeaderTooLong, 4000162).
    package static let headerCharacters = 66
    /// Characters of a message's body (BodyTooLong, 4000163).
    package static let bodyCharacters = 144
    /// Characters of an image's alternative text (AltTextTooLong, 4000175).
    package static let altTextCharacters = 150
    /// Bullet points of one message (BadRequestTooManyBulletPoints, 4000218).
    package static let bulletPoints = 5
    /// Characters of one bullet point's text (BadRequestBulletPointTextTooLong, 4000219).
    package static let bulletPointTextCharacters = 66
    /// Characters of the realtime URL (Apple's `realtimeURL`: at most 256, else BadRequestRealtimeUrl, 4000215).
    package static let realtimeURLCharacters = 256
    /// Images per app (MaximumNumberOfImagesReached, 4030014).
    package static let imagesPerApp = 2000
    /// Messages per app (MaximumNumberOfMessagesReached, 4030016). Apple documents the error but, in what the
    /// project could read, not the number; the images' 2000 is assumed.
    package static let messagesPerApp = 2000
    /// The width of a full-size image, in pixels.
    package static let fullSizeWidth = 3840
    /// The heights a full-size image may have, in pixels.
    package static let fullSizeHeights = 160...2160
    /// Bytes of one uploaded image: the gateway's limit (Apple documents none), the default largest gRPC request.
    package static let imageBytes = 4 * 1024 * 1024

    /// The image sizes Apple knows (its `imageSize`).
    package enum ImageSize: String, Sendable, Hashable, CaseIterable {
        /// An image above a message's body; also what Apple assumes when no size is sent.
        case fullSize = "FULL_SIZE"
        /// A bullet point's icon.
        case bulletPoint = "BULLET_POINT"
    }

    /// Why `png` cannot be uploaded as an image of `size`, or nil when it can: a PNG without transparency; a
    /// full-size image 3840 pixels wide and 160 to 2160 high. Apple's documentation, as far as the project could
    /// read it, gives no dimensions for bullet-point images: they may be at most as large as a full-size one.
    package static func imageProblem(_ png: [UInt8], size: ImageSize) -> String? {
        guard png.count <= imageBytes else { return "must be at most \(imageBytes) bytes (got \(png.count))" }
        let header: PNGImageHeader
        do {
            header = try PNGImageHeader(parsing: png)
        } catch {
            return error.description
        }
        if header.hasTransparency { return "must not have transparency (an alpha channel or a tRNS chunk)" }
        switch size {
        case .fullSize:
            guard header.width == fullSizeWidth, fullSizeHeights.contains(header.height) else {
                return "a full-size image must be \(fullSizeWidth) pixels wide and \(fullSizeHeights.lowerBound) to "
                    + "\(fullSizeHeights.upperBound) high (got \(header.width) × \(header.height))"
            }
        case .bulletPoint:
            guard header.width <= fullSizeWidth, header.height <= fullSizeHeights.upperBound else {
                return "a bullet-point image must be at most \(fullSizeWidth) × \(fullSizeHeights.upperBound) pixels "
                    + "(got \(header.width) × \(header.height))"
            }
        }
        return nil
    }

    /// A text's length in Unicode scalars, as Apple's Python library counts it (Apple does not say how its servers
    /// count).
    package static func characters(_ text: String) -> Int { text.unicodeScalars.count }

    /// Whether `url` is a realtime URL Apple accepts: it must begin with `https://` (Apple's `realtimeURL`; else
    /// BadRequestRealtimeUrl, 4000215), name a host, be at most `realtimeURLCharacters` long and be free of spaces and
    /// control characters.
    package static func isRealtimeURL(_ url: String) -> Bool {
        guard characters(url) <= realtimeURLCharacters,
            url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F })
        else { return false }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") else { return false }
        let host = lower.dropFirst(8).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !host.isEmpty && !host.hasPrefix(":") && !host.contains("@")
    }

    /// The App Store's locale short codes, which Apple's `locale` must be, exactly: case-sensitive, with `-`
    /// (App Store Connect API, "Managing metadata in your app by using locale shortcodes"; the 39 codes and the 11
    /// Apple added in March 2026).
    package static let locales: Set<String> = [
        "ar-SA", "bn-BD", "ca", "cs", "da", "de-DE", "el", "en-AU", "en-CA", "en-GB", "en-US", "es-ES", "es-MX", "fi",
        "fr-CA", "fr-FR", "gu-IN", "he", "hi", "hr", "hu", "id", "it", "ja", "kn-IN", "ko", "ml-IN", "mr-IN", "ms",
        "nl-NL", "no", "or-IN", "pa-IN", "pl", "pt-BR", "pt-PT", "ro", "ru", "sk", "sl-SI", "sv", "ta-IN", "te-IN",
        "th", "tr", "uk", "ur-PK", "vi", "zh-Hans", "zh-Hant",
    ]

    /// Whether `locale` is one of Apple's `locales`, spelled exactly as Apple spells it (InvalidLocale, 4000164).
    package static func isLocale(_ locale: String) -> Bool { locales.contains(locale) }
}

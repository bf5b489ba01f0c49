import TestSupport
import Testing

@testable import AppStoreDomain

@Suite struct PNGImageHeaderTests {
    @Test func readsDimensionsAndTransparency() throws {
        #expect(PNGBytes.signature == PNGImageHeader.signature)
        let opaque = try PNGImageHeader(parsing: PNGBytes.png(width: 3840, height: 400))
        #expect(opaque.width == 3840 && opaque.height == 400 && opaque.colorType == 2 && !opaque.hasTransparency)
        let alpha = try PNGImageHeader(parsing: PNGBytes.png(width: 10, height: 10, colorType: 6))
        #expect(alpha.hasTransparency)
        let keyed = try PNGImageHeader(
            parsing: PNGBytes.png(width: 10, height: 10, colorType: 3, extra: [PNGBytes.chunk("tRNS", [0])]))
        #expect(keyed.hasTransparency)
    }

    /// Bytes that are not a whole PNG file, with what the refusal says.
    static let malformed: [([UInt8], String)] = {
        let signature = PNGImageHeader.signature
        let end = PNGBytes.chunk("IEND", [])
        var cases: [([UInt8], String)] = []
        cases.append(([], "not a PNG file"))
        cases.append((Array("GIF89a".utf8) + [UInt8](repeating: 0, count: 40), "not a PNG file"))
        cases.append((signature, "truncated"))
        cases.append((PNGBytes.png(width: 1, height: 1, end: false), "truncated"))
        cases.append((PNGBytes.png(width: 1, height: 1) + [0], "after its IEND"))
        cases.append((signature + PNGBytes.chunk("IDAT", []) + end, "IHDR"))
        cases.append((PNGBytes.png(width: 0, height: 1), "width and height"))
        cases.append((signature + PNGBytes.header(width: 1, height: 1) + end, "no image data"))
        cases.append((signature + PNGBytes.header(width: 1, height: 1, depth: 3) + end, "bit depth"))
        return cases
    }()

    @Test(arguments: malformed)
    func refusesWhatIsNotAWholePNG(bytes: [UInt8], problem: String) {
        do {
            _ = try PNGImageHeader(parsing: bytes)
            Issue.record("accepted \(bytes.count) bytes")
        } catch {
            #expect(error.description.contains(problem), "\(error.description)")
        }
    }

    @Test func aHostileChunkLengthIsRefusedWithoutTrapping() {
        var bytes = PNGBytes.png(width: 1, height: 1)
        // The IDAT chunk's length set to 0xFFFFFFFF.
        let idat = PNGImageHeader.signature.count + 25
        bytes.replaceSubrange(idat..<(idat + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: PNGImageHeader.Problem.self) { try PNGImageHeader(parsing: bytes) }
    }
}

@Suite struct RetentionMessagingLimitsTests {
    @Test func fullSizeImagesAre3840WideAnd160To2160High() {
        #expect(RetentionMessagingLimits.imageProblem(PNGBytes.png(width: 3840, height: 160), size: .fullSize) == nil)
        #expect(RetentionMessagingLimits.imageProblem(PNGBytes.png(width: 3840, height: 2160), size: .fullSize) == nil)
        for (width, height) in [(3839, 400), (3840, 159), (3840, 2161), (1920, 1080)] {
            let problem = RetentionMessagingLimits.imageProblem(
                PNGBytes.png(width: UInt32(width), height: UInt32(height)), size: .fullSize)
            #expect(problem?.contains("3840 pixels wide") == true)
        }
    }

    @Test func bulletPointsMayBeSmallButNotTransparent() {
        #expect(RetentionMessagingLimits.imageProblem(PNGBytes.png(width: 64, height: 64), size: .bulletPoint) == nil)
        let alpha = RetentionMessagingLimits.imageProblem(
            PNGBytes.png(width: 64, height: 64, colorType: 6), size: .bulletPoint)
        #expect(alpha?.contains("transparency") == true)
        #expect(
            RetentionMessagingLimits.imageProblem(PNGBytes.png(width: 4000, height: 64), size: .bulletPoint) != nil)
    }

    @Test func anImageOverTheByteLimitIsRefusedBeforeItIsRead() {
        let big = PNGBytes.png(width: 3840, height: 400) + [UInt8](repeating: 0, count: 4 * 1024 * 1024)
        #expect(RetentionMessagingLimits.imageProblem(big, size: .fullSize)?.contains("bytes") == true)
    }

    @Test func charactersAreUnicodeScalars() {
        #expect(RetentionMessagingLimits.characters("héllo") == 5)
        #expect(RetentionMessagingLimits.characters("👍🏽") == 2)
    }

    @Test(arguments: [
        ("https://example.com/realtime", true), ("http://127.0.0.1:8080/rt", false), ("HTTPS://EXAMPLE.COM", true),
        ("http://example.com/realtime", false), ("https://example.com/" + String(repeating: "a", count: 236), true),
        ("ftp://example.com", false), ("https://", false), ("https:///path", false), ("https://a b", false),
        ("https://user@host/", false), ("example.com", false),
        ("https://example.com/" + String(repeating: "a", count: 240), false),
    ])
    func realtimeURLs(url: String, valid: Bool) {
        #expect(RetentionMessagingLimits.isRealtimeURL(url) == valid)
    }

    @Test(arguments: [
        ("en-US", true), ("zh-Hans", true), ("zh-Hant", true), ("pt-BR", true), ("ja", true), ("bn-BD", true),
        ("ur-PK", true), ("en", false), ("zh-Hans-CN", false), ("es-419", false), ("pt_BR", false), ("en-us", false),
        ("EN-US", false), ("zh-hans", false), ("e", false), ("english", false), ("../x", false), ("", false),
    ])
    func locales(locale: String, valid: Bool) {
        #expect(RetentionMessagingLimits.isLocale(locale) == valid)
    }

    @Test func applesLocaleListHasItsFiftyCodes() {
        #expect(RetentionMessagingLimits.locales.count == 50)
        #expect(RetentionMessagingLimits.locales.allSatisfy { !$0.contains("_") && $0.first?.isLowercase == true })
    }
}

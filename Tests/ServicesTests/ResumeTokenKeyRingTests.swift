import AppStoreDomain
import Configuration
import Foundation
import GatewayFoundation
import Logging
import Testing

@testable import Edge
@testable import Services

/// The resume-token key ring file: its format, its checks at load, its reload, and that nothing in it
/// comes from the apps' keys.
@Suite struct ResumeTokenKeyRingTests {
    static let first = Array(repeating: UInt8(1), count: 32)
    static let second = (0..<48).map { UInt8($0) }

    static func line(_ key: [UInt8]) -> String { Base64.encode(key, variant: .standard) }

    /// A ring file in a fresh directory, mode `mode`; returns its path.
    static func file(_ text: String, mode: Int = 0o600) throws -> String {
        let directory = NSTemporaryDirectory() + "resume-ring-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/ring"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    static func problem(_ text: String) -> String? {
        do {
            _ = try ResumeTokenKeyRing.parse(Array(text.utf8), path: "/ring")
            return nil
        } catch {
            #expect(error.key == "notifications.resumeTokenKeyFile")
            return error.problem
        }
    }

    @Test func aRingIsBase64KeysOnePerLineWithCommentsAndBlankLines() throws {
        let text = """
            # newest first: the first key signs
              \(Self.line(Self.first))\r

            \(Self.line(Self.second).replacingOccurrences(of: "=", with: ""))
            """
        #expect(try ResumeTokenKeyRing.parse(Array(text.utf8), path: "/ring") == [Self.first, Self.second])
    }

    @Test func aBadRingIsAConfigurationErrorNamingTheLineNeverTheKey() {
        let short = Self.line(Array(repeating: 7, count: 16))
        #expect(Self.problem("# comment\n\(short)\n")?.contains("line 2 of '/ring' holds a 16-byte key") == true)
        #expect(Self.problem("# comment\n\(short)\n")?.contains(short) == false, "a key is never echoed")
        #expect(Self.problem("not base64 at all!\n")?.contains("line 1 of '/ring' is not a base64 key") == true)
        #expect(Self.problem(Self.line(Array(repeating: 7, count: 257)))?.contains("257-byte key") == true)
        #expect(Self.problem("\(Self.line(Self.first))\n\(Self.line(Self.first))\n")?.contains("repeats") == true)
        #expect(Self.problem("# only a comment\n\n")?.contains("holds no key") == true)
        #expect(Self.problem("")?.contains("holds no key") == true)
        let seventeen = (0..<17).map { Self.line(Array(repeating: UInt8($0), count: 32)) }.joined(separator: "\n")
        #expect(Self.problem(seventeen)?.contains("more than 16 keys") == true)
        #expect(Self.problem(String(repeating: "#", count: 70_000))?.contains("larger than 64 KiB") == true)
        #expect(throws: ConfigurationError.self) { try ResumeTokenKeyRing.parse([0x23, 0xFF, 0x0A], path: "/ring") }
    }

    @Test func theFileIsJudgedLikeTheAppsKeys() throws {
        let text = Self.line(Self.first) + "\n"
        #expect(try ResumeTokenKeyRing.load(path: try Self.file(text), allowReadableFile: false) == [Self.first])
        let open = try Self.file(text, mode: 0o644)
        #expect(throws: ConfigurationError.self) { try ResumeTokenKeyRing.load(path: open, allowReadableFile: false) }
        #expect(try ResumeTokenKeyRing.load(path: open, allowReadableFile: true) == [Self.first])
        #expect(throws: ConfigurationError.self) {
            try ResumeTokenKeyRing.load(path: "/nonexistent/ring", allowReadableFile: false)
        }
    }

    /// The ring depends on its file alone: adding an app, or rotating an app's key, leaves it (and every
    /// token it issued) as it was. Without a file there is no ring (the process then uses a random key).
    @Test func theRingIgnoresTheAppsAndTheirKeys() throws {
        var configuration = GatewayConfiguration()
        #expect(try ResumeTokenKeyRing.keys(configuration) == nil)
        configuration.notifications.resumeTokenKeyFile = try Self.file(Self.line(Self.first))
        configuration.apps = [
            GatewayConfiguration.App(
                name: "example", bundleId: "com.example.app", appAppleId: 1, issuerId: "i", keyId: "ABCDEFGHIJ",
                privateKeyFile: "/keys/one.p8", environment: .auto)
        ]
        let before = try ResumeTokenKeyRing.keys(configuration)
        configuration.apps[0].privateKeyFile = "/keys/rotated.p8"
        configuration.apps.append(
            GatewayConfiguration.App(
                name: "another", bundleId: "com.example.another", appAppleId: 2, issuerId: "i", keyId: "KLMNOPQRST",
                privateKeyFile: "/keys/another.p8", environment: .auto))
        #expect(try ResumeTokenKeyRing.keys(configuration) == before)
        #expect(before == [Self.first])
    }

    @Test func aChangedFileIsReloadedAndABadOneKeepsTheRingInForce() throws {
        let path = try Self.file(Self.line(Self.first))
        let ring = ResumeTokenKeyRing(keys: try ResumeTokenKeyRing.load(path: path, allowReadableFile: false))
        let reload = ring.watching(path: path, allowReadableFile: false, logger: Logger(label: "test"))
        try Data((Self.line(Self.second) + "\n" + Self.line(Self.first)).utf8).write(to: URL(fileURLWithPath: path))
        try reload.reload()
        #expect(ring.keys == [Self.second, Self.first])
        try Data("garbled\n".utf8).write(to: URL(fileURLWithPath: path))
        // The watcher logs and counts the failure; the ring in force stays.
        #expect(throws: ConfigurationError.self) { try reload.reload() }
        #expect(ring.keys == [Self.second, Self.first])
    }
}

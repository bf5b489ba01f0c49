import AppStoreDomain
import AppleFixtures
import Configuration
import Cryptography
import Foundation
import Testing

@testable import AppStoreClient

/// Key files as the kubelet mounts a Secret: symlinks into a timestamped directory, 0440, the pod's fsGroup.
@Suite struct KeyFileAccessTests {
    @Test func modesAndGroups() {
        let own: Set<gid_t> = [1000, 2000]
        #expect(KeyFileAccess.problem(mode: 0o400, fileGroup: 5, processGroups: own) == nil)
        #expect(KeyFileAccess.problem(mode: 0o600, fileGroup: 5, processGroups: own) == nil)
        #expect(KeyFileAccess.problem(mode: 0o440, fileGroup: 2000, processGroups: own) == nil)
        #expect(KeyFileAccess.problem(mode: 0o640, fileGroup: 1000, processGroups: own) == nil)
        #expect(KeyFileAccess.problem(mode: 0o440, fileGroup: 5, processGroups: own)?.contains("group 5") == true)
        #expect(KeyFileAccess.problem(mode: 0o460, fileGroup: 2000, processGroups: own)?.contains("writable") == true)
        #expect(KeyFileAccess.problem(mode: 0o444, fileGroup: 2000, processGroups: own)?.contains("others") == true)
        #expect(KeyFileAccess.problem(mode: 0o604, fileGroup: 2000, processGroups: own) != nil)
    }

    @Test func kubeletLayoutIsFollowedToTheRealFile() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("kubelet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let pem = try ECPrivateKey(generatingOn: .p256).pkcs8PEM()
        func mount(_ mode: Int) throws -> String {
            // keys/app.p8 → ..data/app.p8, ..data → ..2026_11_23_14_00_00.123 (the kubelet's atomic writer).
            try? FileManager.default.removeItem(atPath: root)
            let stamped = root + "/..2026_11_23_14_00_00.123456789"
            try FileManager.default.createDirectory(atPath: stamped, withIntermediateDirectories: true)
            try pem.write(toFile: stamped + "/app.p8", atomically: false, encoding: .utf8)
            #expect(chown(stamped + "/app.p8", getuid(), getegid()) == 0)
            #expect(chmod(stamped + "/app.p8", mode_t(mode)) == 0)
            try FileManager.default.createSymbolicLink(
                atPath: root + "/..data", withDestinationPath: "..2026_11_23_14_00_00.123456789")
            try FileManager.default.createSymbolicLink(atPath: root + "/app.p8", withDestinationPath: "..data/app.p8")
            return root + "/app.p8"
        }
        var app = UpstreamFixture.app("example")
        app.privateKeyFile = try mount(0o440)
        #expect(throws: Never.self) { _ = try AppKeySigner.load(app: app, index: 0, allowReadableFile: false) }
        app.privateKeyFile = try mount(0o444)
        let error = #expect(throws: ConfigurationError.self) {
            _ = try AppKeySigner.load(app: app, index: 0, allowReadableFile: false)
        }
        #expect(error?.key == "apps[0].privateKeyFile")
        #expect(error?.problem.contains("mode 444") == true)
    }
}

/// `apple.caFile` pins: libcurl's system CA directory is cleared unless `apple.trustSystemCAs`.
@Suite struct UpstreamTrustTests {
    @Test func caFileReplacesTheSystemCAs() {
        #expect(UpstreamTrust(caFile: "", trustSystemCAs: false) == UpstreamTrust(caBundle: nil, systemDirectory: true))
        #expect(
            UpstreamTrust(caFile: "/ca.pem", trustSystemCAs: false)
                == UpstreamTrust(caBundle: "/ca.pem", systemDirectory: false))
        #expect(
            UpstreamTrust(caFile: "/ca.pem", trustSystemCAs: true)
                == UpstreamTrust(caBundle: "/ca.pem", systemDirectory: true))
    }

    @Test func theOneCheckNamesItsKeyAndHonoursTheEscapeHatch() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "secret".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(chmod(path, 0o600) == 0)
        #expect(throws: Never.self) {
            try KeyFileAccess.check(path, key: "tls.privateKeyFile", allowReadableFile: false)
        }
        #expect(chmod(path, 0o644) == 0)
        let error = #expect(throws: ConfigurationError.self) {
            try KeyFileAccess.check(path, key: "tls.privateKeyFile", allowReadableFile: false)
        }
        #expect(error?.key == "tls.privateKeyFile" && error?.problem.contains("mode 644") == true)
        #expect(throws: Never.self) {
            try KeyFileAccess.check(path, key: "tls.privateKeyFile", allowReadableFile: true)
        }
        let missing = #expect(throws: ConfigurationError.self) {
            try KeyFileAccess.check(path + ".gone", key: "redis.keyFile", allowReadableFile: true)
        }
        #expect(missing?.key == "redis.keyFile")
    }
}

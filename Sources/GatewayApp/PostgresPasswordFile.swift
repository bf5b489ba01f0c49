import AppStoreClient
import AppStoreDomain
import Foundation

/// `notifications.store.postgresPasswordFile`: the PostgreSQL password kept apart from the URI (a Kubernetes
/// Secret volume). A secret, so it is judged like the apps' keys: refused when others may read it, unless
/// `apple.allowReadableKeyFiles`.
enum PostgresPasswordFile {
    static let key = "notifications.store.postgresPasswordFile"

    /// The file's first line (a trailing newline, as `kubectl create secret --from-file` keeps it, is not part of
    /// it). A problem never quotes the content.
    static func load(_ path: String, allowReadableFile: Bool) throws(ConfigurationError) -> String {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ConfigurationError(key: key, problem: "cannot read '\(path)' (missing, not accessible or not a file)")
        }
        if !allowReadableFile,
            let problem = KeyFileAccess.problem(
                mode: Int(info.st_mode & 0o777), fileGroup: info.st_gid, processGroups: KeyFileAccess.processGroups())
        {
            throw ConfigurationError(
                key: key, problem: "'\(path)' \(problem); chmod 600 it, or set apple.allowReadableKeyFiles: true")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError(key: key, problem: "cannot read '\(path)'")
        }
        defer { try? handle.close() }
        let bytes = [UInt8](handle.readData(ofLength: 4097))
        guard bytes.count <= 4096 else { throw ConfigurationError(key: key, problem: "'\(path)' is larger than 4 KiB") }
        let line = bytes.prefix { $0 != 0x0A && $0 != 0x0D }
        guard !line.isEmpty, !line.contains(0), let password = String(validating: line, as: UTF8.self) else {
            throw ConfigurationError(key: key, problem: "'\(path)' does not start with a password line")
        }
        return password
    }
}

import AppStoreDomain
import Foundation

/// Who may read a private-key file, judged from its mode and group.
///
/// Group read is accepted only when the file's group is one of the process's own groups: that is how
/// Kubernetes mounts a Secret with `fsGroup` (mode 0440, group = the pod's fsGroup, which the container
/// process holds as a supplementary group). Any permission for others, group write, or group read for a
/// foreign group is refused.
package enum KeyFileAccess {
    /// Why a file with `mode` (permission bits) and `fileGroup` is too open, or nil when it is fine.
    package static func problem(mode: Int, fileGroup: gid_t, processGroups: Set<gid_t>) -> String? {
        let octal = String(mode & 0o777, radix: 8)
        if mode & 0o007 != 0 { return "is readable or writable by others (mode \(octal))" }
        if mode & 0o020 != 0 { return "is writable by its group (mode \(octal))" }
        if mode & 0o050 != 0 && !processGroups.contains(fileGroup) {
            return "is readable by group \(fileGroup), which is not this process's group (mode \(octal))"
        }
        return nil
    }

    /// Refuses the secret file at `path` (an app's `.p8`, a TLS or Redis client key, the resume-token key ring)
    /// when it is missing or not a regular file, or, unless `allowReadableFile` (`apple.allowReadableKeyFiles`),
    /// when its mode lets others or a foreign group read it. Follows symlinks and judges the file they lead to:
    /// Kubernetes mounts each Secret key as key → ..data/key → ..2026_…/key, and a link's own mode (0777) says
    /// nothing about who can read the key. The error names `key`.
    package static func check(_ path: String, key: String, allowReadableFile: Bool) throws(ConfigurationError) {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ConfigurationError(key: key, problem: "cannot read '\(path)' (missing, not accessible or not a file)")
        }
        guard !allowReadableFile,
            let problem = problem(
                mode: Int(info.st_mode & 0o777), fileGroup: info.st_gid, processGroups: processGroups())
        else { return }
        throw ConfigurationError(
            key: key, problem: "'\(path)' \(problem); chmod 600 it, or set apple.allowReadableKeyFiles: true")
    }

    /// The process's effective group and its supplementary groups (where `fsGroup` appears).
    package static func processGroups() -> Set<gid_t> {
        var groups: Set<gid_t> = [getegid()]
        let count = getgroups(0, nil)
        if count > 0 {
            var list = [gid_t](repeating: 0, count: Int(count))
            let filled = getgroups(count, &list)
            if filled > 0 { groups.formUnion(list.prefix(Int(filled))) }
        }
        return groups
    }
}

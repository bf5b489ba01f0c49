import Foundation

/// Who may read a private-key file, judged from its mode and group.
///
/// Group read is accepted only when the file's group is one of the process's own groups: that is how
/// Kubernetes mounts a Secret with `fsGroup` (mode 0440, group = the pod's fsGroup, which the container
/// process holds as a supplementary group). Any permission for others, group write, or group read for a
/// foreign group is refused.
public enum KeyFileAccess {
    /// Why a file with `mode` (permission bits) and `fileGroup` is too open, or nil when it is fine.
    public static func problem(mode: Int, fileGroup: gid_t, processGroups: Set<gid_t>) -> String? {
        let octal = String(mode & 0o777, radix: 8)
        if mode & 0o007 != 0 { return "is readable or writable by others (mode \(octal))" }
        if mode & 0o020 != 0 { return "is writable by its group (mode \(octal))" }
        if mode & 0o050 != 0 && !processGroups.contains(fileGroup) {
            return "is readable by group \(fileGroup), which is not this process's group (mode \(octal))"
        }
        return nil
    }

    /// The process's effective group and its supplementary groups (where `fsGroup` appears).
    public static func processGroups() -> Set<gid_t> {
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

import AppStoreDomain
import GatewayFoundation
import Yams

/// Reads typed values out of a parsed YAML tree by dotted key path, with environment overrides.
///
/// Every scalar key can be overridden by an environment variable named `APPSTORE_GATEWAY_` + the path in
/// UPPER_SNAKE (`limits.maxReceiveMessageBytes` → `APPSTORE_GATEWAY_LIMITS_MAX_RECEIVE_MESSAGE_BYTES`,
/// `apps[0].keyId` → `APPSTORE_GATEWAY_APPS_0_KEY_ID`). Keys present in the file but never read are
/// reported as unknown, so a misspelt key fails loudly instead of being ignored.
package final class ConfigurationReader {
    private let root: Node?
    private let environment: [String: String]
    private var consumed: Set<String> = []

    /// Parses `yaml`; an empty document is an empty configuration.
    package init(yaml: String, environment: [String: String]) throws(ConfigurationError) {
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError(key: "", problem: "not valid YAML: \(error)")
        }
        if let root, root.mapping == nil {
            throw ConfigurationError(key: "", problem: "the top level must be a mapping of keys")
        }
        self.environment = environment
    }

    // MARK: Scalars

    package func string(_ path: String) throws(ConfigurationError) -> String? {
        let node = node(at: path)
        if node != nil { consumed.insert(path) }
        if let value = environment[Self.environmentName(path)] { return value }
        guard let node else { return nil }
        guard let scalar = node.scalar else {
            throw ConfigurationError(key: path, problem: "must be a single value, not a list or mapping")
        }
        return scalar.string
    }

    package func integer(_ path: String, in range: ClosedRange<Int>? = nil) throws(ConfigurationError) -> Int? {
        guard let text = try string(path) else { return nil }
        guard let value = Int(text.trimmingSpaces()) else {
            throw ConfigurationError(key: path, problem: "must be an integer, got '\(text)'")
        }
        if let range, !range.contains(value) {
            throw ConfigurationError(
                key: path, problem: "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }

    package func double(_ path: String, in range: ClosedRange<Double>? = nil) throws(ConfigurationError) -> Double? {
        guard let text = try string(path) else { return nil }
        guard let value = Double(text.trimmingSpaces()), value.isFinite else {
            throw ConfigurationError(key: path, problem: "must be a number, got '\(text)'")
        }
        if let range, !range.contains(value) {
            throw ConfigurationError(
                key: path, problem: "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
        return value
    }

    package func bool(_ path: String) throws(ConfigurationError) -> Bool? {
        guard let text = try string(path) else { return nil }
        switch text.trimmingSpaces().lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw ConfigurationError(key: path, problem: "must be true or false, got '\(text)'")
        }
    }

    /// A duration written with a unit: "250ms", "20s", "5m", "2h" (a bare number is seconds).
    package func milliseconds(_ path: String) throws(ConfigurationError) -> UInt64? {
        guard let text = try string(path) else { return nil }
        guard let value = DurationText.milliseconds(text) else {
            throw ConfigurationError(
                key: path, problem: "must be a duration such as 500ms, 20s, 5m, 2h or 30d, got '\(text)'")
        }
        return value
    }

    /// A duration key (see `milliseconds`) as a `Duration`.
    package func duration(_ path: String) throws(ConfigurationError) -> Duration? {
        try milliseconds(path).map { .milliseconds(Int64(clamping: $0)) }
    }

    // MARK: Collections

    /// The number of items of a list (0 when absent).
    package func count(_ path: String) throws(ConfigurationError) -> Int {
        guard let node = node(at: path) else { return 0 }
        consumed.insert(path)
        guard let sequence = node.sequence else {
            throw ConfigurationError(key: path, problem: "must be a list")
        }
        return sequence.count
    }

    /// A list of strings (an environment override is comma-separated).
    package func strings(_ path: String) throws(ConfigurationError) -> [String]? {
        let node = node(at: path)
        if node != nil { consumed.insert(path) }
        if let value = environment[Self.environmentName(path)] {
            return value.split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
        }
        guard let node else { return nil }
        if node.scalar != nil, node.scalar?.string == "" { return [] }
        guard let sequence = node.sequence else {
            throw ConfigurationError(key: path, problem: "must be a list of strings")
        }
        var out: [String] = []
        for (index, item) in sequence.enumerated() {
            guard let scalar = item.scalar else {
                throw ConfigurationError(key: "\(path)[\(index)]", problem: "must be a string")
            }
            out.append(scalar.string)
        }
        return out
    }

    /// The keys of a mapping (empty when absent).
    package func keys(_ path: String) throws(ConfigurationError) -> [String] {
        guard let node = node(at: path) else { return [] }
        consumed.insert(path)
        guard let mapping = node.mapping else {
            throw ConfigurationError(key: path, problem: "must be a mapping of keys")
        }
        return mapping.keys.compactMap { $0.scalar?.string }
    }

    /// Whether `path` is a mapping of keys in the document (a section rather than a value).
    package func isMapping(_ path: String) -> Bool { node(at: path)?.mapping != nil }

    /// The environment variable that overrides `path`, when it is set (for a key that is a value in one form
    /// and a section in another, such as `admin`).
    package func environmentOverride(_ path: String) -> String? { environment[Self.environmentName(path)] }

    /// Whether `path` is in the document at all (e.g. an empty list, which `count` cannot tell from absence).
    package func isPresent(_ path: String) -> Bool { node(at: path) != nil }

    /// Fails on the first key of the file that no reader asked for.
    package func rejectUnknownKeys() throws(ConfigurationError) {
        guard let root else { return }
        if let unknown = firstUnknown(root, path: "") {
            throw ConfigurationError(key: unknown, problem: "unknown key (misspelt, or not a setting of this version)")
        }
    }

    /// Every key present in the document but never read, in document order.
    package func unknownKeys() -> [String] {
        guard let root else { return [] }
        var found: [String] = []
        collectUnknown(root, path: "", into: &found)
        return found
    }

    private func collectUnknown(_ node: Node, path: String, into found: inout [String]) {
        if let mapping = node.mapping {
            for (key, value) in mapping {
                let name = key.scalar?.string ?? "?"
                let child = path.isEmpty ? name : "\(path).\(name)"
                collectUnknown(value, path: child, into: &found)
                if value.mapping == nil && !consumed.contains(child) && !consumedPrefix(child) { found.append(child) }
            }
        } else if let sequence = node.sequence {
            for (index, item) in sequence.enumerated() { collectUnknown(item, path: "\(path)[\(index)]", into: &found) }
        }
    }

    private func firstUnknown(_ node: Node, path: String) -> String? {
        if let mapping = node.mapping {
            for (key, value) in mapping {
                let name = key.scalar?.string ?? "?"
                let child = path.isEmpty ? name : "\(path).\(name)"
                if let deeper = firstUnknown(value, path: child) { return deeper }
                // A section (mapping) is named by its unknown leaf above; anything else by itself.
                if value.mapping == nil && !consumed.contains(child) && !consumedPrefix(child) { return child }
            }
        } else if let sequence = node.sequence {
            for (index, item) in sequence.enumerated() {
                if let deeper = firstUnknown(item, path: "\(path)[\(index)]") { return deeper }
            }
        }
        return nil
    }

    private func consumedPrefix(_ path: String) -> Bool {
        consumed.contains { $0.hasPrefix(path + ".") || $0.hasPrefix(path + "[") }
    }

    // MARK: Paths

    private func node(at path: String) -> Node? {
        var current = root
        for component in Self.components(path) {
            guard let node = current else { return nil }
            switch component {
            case .key(let key): current = node.mapping?[Node(key)]
            case .index(let index):
                guard let sequence = node.sequence, index < sequence.count else { return nil }
                current = sequence[index]
            }
        }
        if let scalar = current?.scalar, scalar.style == .plain,
            ["", "~", "null", "Null", "NULL"].contains(scalar.string)
        {
            return nil  // `key:` with no value counts as absent
        }
        return current
    }

    private enum Component { case key(String), index(Int) }

    private static func components(_ path: String) -> [Component] {
        var out: [Component] = []
        for part in path.split(separator: ".") {
            var rest = Substring(part)
            if let bracket = rest.firstIndex(of: "[") {
                out.append(.key(String(rest[..<bracket])))
                rest = rest[bracket...]
                while rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                    if let index = Int(rest[rest.index(after: rest.startIndex)..<close]) { out.append(.index(index)) }
                    rest = rest[rest.index(after: close)...]
                }
            } else {
                out.append(.key(String(rest)))
            }
        }
        return out
    }

    /// `apps[0].keyId` → `APPSTORE_GATEWAY_APPS_0_KEY_ID`.
    package static func environmentName(_ path: String) -> String {
        var out = "APPSTORE_GATEWAY_"
        var previousLower = false
        for character in path {
            switch character {
            case ".", "[": out.append("_"); previousLower = false
            case "]": previousLower = false
            default:
                if character.isUppercase && previousLower { out.append("_") }
                out.append(contentsOf: character.uppercased())
                previousLower = character.isLowercase || character.isNumber
            }
        }
        return out
    }
}

/// Durations written as text with a unit.
package enum DurationText {
    /// "250ms", "20s", "5m", "2h", "30d", or a bare number of seconds → milliseconds; nil when malformed or longer
    /// than 100 years (so every value also fits `Int64` and `Duration` arithmetic: "1e30s" must not trap).
    package static func milliseconds(_ text: String) -> UInt64? {
        let trimmed = text.trimmingSpaces()
        let units: [(String, Double)] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            guard let number = Double(trimmed.dropLast(suffix.count)) else { return nil }
            return bounded(number * factor)
        }
        guard let seconds = Double(trimmed) else { return nil }
        return bounded(seconds * 1_000)
    }

    /// The longest duration accepted: 100 years in milliseconds.
    static let maximumMilliseconds: Double = 100 * 366 * 86_400_000

    private static func bounded(_ milliseconds: Double) -> UInt64? {
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds <= maximumMilliseconds else { return nil }
        return UInt64(milliseconds)
    }
}

extension String {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}

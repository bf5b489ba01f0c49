internal import CLibPQ

/// Where PostgreSQL is and how a connection to it behaves. The connection string is libpq's own, in either form:
/// a URI (`postgresql://user:password@host:5432/db?sslmode=verify-full&sslrootcert=/etc/ca.pem`) or a list of
/// `key=value` options (`host=db port=5432 dbname=app sslmode=require`); libpq parses it (`PQconninfoParse`), so
/// every option libpq knows works (TLS: `sslmode`, `sslrootcert`, `sslcert`, `sslkey`, `sslcrl`; several hosts
/// with `target_session_attrs`) and an unknown one is an `.invalidURI` error. Its `description` never shows a
/// password, so it can be logged.
package struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// One option the connection string set.
    package struct Option: Sendable, Hashable {
        package let keyword: String
        package let value: String
    }

    /// The options the connection string set, in libpq's order of keywords.
    package private(set) var options: [Option]
    /// How long one connection attempt may take (TCP, TLS, authentication), on the loop's timer. The connection
    /// string's `connect_timeout`, when set, replaces the default (5 s).
    package var connectTimeout: Duration
    /// The deadline of a statement that names none: its caller is answered `.timeout` and the statement cancelled.
    package var queryTimeout: Duration = .seconds(30)
    /// How large one result may grow.
    package var limits = PostgresResultLimits()
    /// How soon a lost connection is replaced.
    package var reconnect = PostgresBackoff()
    /// How many notifications a slow subscriber may have waiting before the oldest are dropped.
    package var notificationBuffer = 1024

    /// The options whose values are secrets, shown as `***`.
    static let secretKeywords: Set<String> = ["password", "sslpassword"]

    /// Parses `connectionString`; `.invalidURI` when libpq cannot (the error's message hides any password).
    package init(_ connectionString: String) throws(PostgresError) {
        guard !connectionString.utf8.contains(0) else {
            throw PostgresError(.invalidURI, "the connection string holds a NUL byte")
        }
        var error: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(connectionString, &error) else {
            let message = error.map { String(cString: $0) } ?? "out of memory"
            if let error { PQfreemem(error) }
            throw PostgresError(
                .invalidURI,
                "cannot parse the connection string: "
                    + Self.hidingSecrets(of: connectionString, in: message.trimmingTrailingNewlines))
        }
        defer { PQconninfoFree(parsed) }
        var options: [Option] = []
        var index = 0
        while let keyword = parsed[index].keyword {
            if let value = parsed[index].val {
                options.append(Option(keyword: String(cString: keyword), value: String(cString: value)))
            }
            index += 1
        }
        self.options = options
        let seconds = options.first { $0.keyword == "connect_timeout" }.flatMap { Int($0.value) } ?? 0
        connectTimeout = seconds > 0 ? .seconds(max(2, seconds)) : .seconds(5)
    }

    /// The same configuration with `password` as the password (replacing one the connection string set): for a
    /// password kept in a file of its own. A NUL byte in it is refused.
    package func with(password: String) throws(PostgresError) -> PostgresConfiguration {
        guard !password.utf8.contains(0) else { throw PostgresError(.invalidURI, "the password holds a NUL byte") }
        var copy = self
        copy.options.removeAll { $0.keyword == "password" }
        copy.options.append(Option(keyword: "password", value: password))
        return copy
    }

    /// The value of option `keyword`, if set.
    package subscript(keyword: String) -> String? {
        options.first { $0.keyword == keyword }?.value
    }

    /// The options as a `key=value` list with every secret shown as `***`.
    package var description: String {
        options.map { option in
            let value = Self.secretKeywords.contains(option.keyword) ? "***" : Self.quoted(option.value)
            return "\(option.keyword)=\(value)"
        }.joined(separator: " ")
    }

    /// A value as a `key=value` list writes it: bare when it is plain, else in single quotes with `\` escapes.
    private static func quoted(_ value: String) -> String {
        let plain =
            !value.isEmpty
            && value.unicodeScalars.allSatisfy { $0 != " " && $0 != "'" && $0 != "\\" && $0.value > 0x20 }
        if plain { return value }
        var text = "'"
        for character in value {
            if character == "'" || character == "\\" { text.append("\\") }
            text.append(character)
        }
        return text + "'"
    }

    /// `message` with every secret `text` may hold replaced by `***`: the password of a URI's user information and
    /// the value of a `password=` or `sslpassword=` option, as written and percent-decoded (libpq quotes the
    /// part it failed on, which may be the password).
    static func hidingSecrets(of text: String, in message: String) -> String {
        var secrets: [String] = []
        if let scheme = text.firstRange(of: "://") {
            let authority = text[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@") {
                let userInfo = authority[..<at]
                secrets.append(String(userInfo))
                if let colon = userInfo.firstIndex(of: ":") {
                    secrets.append(String(userInfo[userInfo.index(after: colon)...]))
                }
            }
        }
        for keyword in secretKeywords {
            var rest = Substring(text)
            while let found = rest.firstRange(of: keyword + "=") {
                let value = rest[found.upperBound...].prefix { $0 != " " && $0 != "&" }
                secrets.append(String(value))
                rest = rest[found.upperBound...]
            }
        }
        var hidden = message
        for secret in secrets where !secret.isEmpty {
            hidden = hidden.replacing(secret, with: "***")
            if let decoded = secret.removingPercentEncodingLeniently, !decoded.isEmpty {
                hidden = hidden.replacing(decoded, with: "***")
            }
        }
        return hidden
    }

    /// The keywords and values a connection attempt passes to libpq: the parsed options, with the host lists
    /// resolved off the loop when there are names in them, and UTF-8 as the client encoding (the rows decode
    /// text as UTF-8).
    func connectionParameters(resolved: HostResolution.Resolved?) -> [(String, String)] {
        var replaced: Set<String> = ["client_encoding"]
        var parameters: [(String, String)] = []
        if let resolved {
            replaced.formUnion(["host", "hostaddr"])
            parameters += [("host", resolved.host), ("hostaddr", resolved.hostaddr)]
            if let port = resolved.port {
                replaced.insert("port")
                parameters.append(("port", port))
            }
        }
        for option in options where !replaced.contains(option.keyword) {
            parameters.append((option.keyword, option.value))
        }
        parameters.append(("client_encoding", "UTF8"))
        return parameters
    }
}

/// How a lost connection is replaced: the first attempt `initial` after the loss, each failed one doubling the
/// wait up to `maximum`. The default (50 ms to 1 s) has a connection back within a second of the server's return.
package struct PostgresBackoff: Sendable, Hashable {
    package var initial: Duration
    package var maximum: Duration

    package init(initial: Duration = .milliseconds(50), maximum: Duration = .seconds(1)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The wait before the attempt that follows `failures` failed ones (0: the first after a loss).
    package func delay(afterFailures failures: Int) -> Duration {
        var delay = initial
        for _ in 0..<min(failures, 40) {
            delay = delay * 2
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var text = self
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }

    /// The text with `%XX` escapes decoded where they are valid (nil when that is not UTF-8).
    var removingPercentEncodingLeniently: String? {
        var bytes: [UInt8] = []
        var utf8 = Array(self.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Where the shared rate budget lives: `redis://[[user]:password@]host[:port][/database]`.
/// The description hides the password, so the value can be logged.
public struct RedisURL: Sendable, Hashable, CustomStringConvertible {
    /// Host name or address (IPv6 without brackets).
    public var host: String
    /// TCP port, default 6379.
    public var port: Int
    /// The logical database selected after connecting, default 0.
    public var database: Int
    /// ACL user name for AUTH, if any.
    public var username: String?
    /// Password for AUTH, if any.
    public var password: String?

    /// A URL with the given parts.
    public init(host: String, port: Int = 6379, database: Int = 0, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.username = username
        self.password = password
    }

    /// Parses `text`; nil unless it is a `redis://` URL with a host, a port in 1...65535 and a database
    /// number in 0...65535. Percent-escapes are not decoded (write the password as is).
    public init?(parsing text: String) {
        guard text.hasPrefix("redis://"), text.utf8.count <= 2048 else { return nil }
        var rest = Substring(text.dropFirst("redis://".count))
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let user = credentials[..<colon]
                username = user.isEmpty ? nil : String(user)
                password = String(credentials[credentials.index(after: colon)...])
            } else {
                password = String(credentials)
            }
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard path.utf8.count <= 5, path.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let number = Int(path), number <= 65535
                else { return nil }
                database = number
            }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        var port = 6379
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let number = Int(portText), (1...65535).contains(number)
            else { return nil }
            port = number
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "/" || $0 == "@" || $0 == " " }) else { return nil }
        self.init(host: String(host), port: port, database: database, username: username, password: password)
    }

    public var description: String {
        let credentials = password == nil ? "" : "\(username ?? ""):***@"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "redis://\(credentials)\(shownHost):\(port)/\(database)"
    }
}

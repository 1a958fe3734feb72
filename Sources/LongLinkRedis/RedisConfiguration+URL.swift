public import LongLinkServer

/// Redis URLs, both ways: parsed into a configuration, and printed back with the password hidden.
extension RedisConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// Parses `redis://[[user]:password@]HOST[:PORT][/DB]`, or `rediss://` for TLS (then ``tls`` is
    /// the default `TLSConfiguration`: full verification against the system's trust store). Port
    /// 6379 and database 0 when left out; an IPv6 host in brackets. `redis://:password@` and
    /// `redis://password@` log in as the `default` user. User and password may be percent-encoded.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for another scheme, a
    /// missing host, or a port or database that is not a number in range. The error never quotes
    /// the password, nor text that might be one (a port that is not a number is not repeated).
    public init(url: String) throws(LongLinkError) {
        func fail(_ why: String) -> LongLinkError {
            LongLinkError(
                code: .invalidConfiguration,
                message: "bad Redis URL (\(why)); expected redis[s]://[[user]:password@]HOST[:PORT][/DB]")
        }
        let useTLS: Bool
        var rest: Substring
        if url.lowercased().hasPrefix("redis://") {
            useTLS = false
            rest = Substring(url.dropFirst("redis://".count))
        } else if url.lowercased().hasPrefix("rediss://") {
            useTLS = true
            rest = Substring(url.dropFirst("rediss://".count))
        } else {
            throw fail("the scheme is not redis:// or rediss://")
        }
        self.init()
        if useTLS { tls = TLSConfiguration() }
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let user = String(credentials[..<colon])
                username = user.isEmpty ? nil : try Self.percentDecoded(user, fail)
                password = try Self.percentDecoded(String(credentials[credentials.index(after: colon)...]), fail)
            } else {
                // redis://secret@host: a password alone, as redis-cli reads it.
                password = try Self.percentDecoded(String(credentials), fail)
            }
        }
        if let slash = rest.firstIndex(of: "/") {
            let db = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !db.isEmpty {
                guard let number = Int(db), number >= 0 else { throw fail(Self.quoted("database", db)) }
                database = number
            }
        }
        var hostPart = rest
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("unclosed [") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            hostPart = rest[rest.index(after: close)...]
            if !hostPart.isEmpty {
                guard hostPart.hasPrefix(":") else { throw fail("text after ]") }
                port = try Self.port(hostPart.dropFirst(), fail)
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            port = try Self.port(rest[rest.index(after: colon)...], fail)
        } else {
            host = String(rest)
        }
        guard !host.isEmpty else { throw fail("no host") }
    }

    /// The URL this configuration connects to, with the password as `***`:
    /// `rediss://app:***@10.0.0.5:6380/3`.
    public var description: String {
        var text = tls == nil ? "redis://" : "rediss://"
        if let password {
            text += (username ?? "") + (password.isEmpty ? ":@" : ":***@")
        }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)"
        if database != 0 { text += "/\(database)" }
        return text
    }

    /// Every setting, the password as `***` and PEM bytes left out.
    public var debugDescription: String {
        var text = "RedisConfiguration(\(description), keyPrefix: \"\(keyPrefix)\""
        text += ", commandTimeout: \(commandTimeout), connectTimeout: \(connectTimeout)"
        text += ", reconnectDelay: \(initialReconnectDelay)...\(maximumReconnectDelay)"
        if let tls {
            let roots =
                switch tls.trustRoots {
                case .systemDefault: "system trust store"
                case .pemFile(let path): "CA file \(path)"
                case .pemBytes: "CA PEM bytes"
                }
            text += ", tls: \(tls.certificateVerification) against the \(roots)"
            if let name = tls.serverHostname { text += ", server name \(name)" }
            if !tls.pinnedPublicKeys.isEmpty { text += ", \(tls.pinnedPublicKeys.count) pinned keys" }
            if tls.certificateChain != nil { text += ", client certificate" }
        }
        return text + ")"
    }

    /// `what` and `text` when `text` is a number (out of range), otherwise only that it is not one:
    /// text that is not a number may be a password from a URL written without its `@`.
    private static func quoted(_ what: String, _ text: Substring) -> String {
        Int(text) == nil ? "the \(what) is not a number" : "\(what) \(text)"
    }

    private static func port(_ text: Substring, _ fail: (String) -> LongLinkError) throws(LongLinkError) -> Int {
        guard let port = Int(text), (1...65535).contains(port) else { throw fail(quoted("port", text)) }
        return port
    }

    private static func percentDecoded(_ text: String, _ fail: (String) -> LongLinkError) throws(LongLinkError)
        -> String
    {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                    let value = UInt8(String(decoding: utf8[high...utf8.index(after: high)], as: UTF8.self), radix: 16)
                else { throw fail("bad percent escape in the user or password") }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Where to connect or listen: a TCP host and port, or a Unix-domain socket path.
public enum Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// A host name, IPv4 literal or IPv6 literal (without brackets), and a port.
    case tcp(host: String, port: Int)
    /// A Unix-domain socket path.
    case unix(path: String)

    /// Parses `host:port`, `[ipv6]:port` or `unix:/path/to.sock`.
    ///
    /// Returns nil for an empty host or path, a missing or out-of-range port (`0...65535`), or an IPv6
    /// literal without brackets.
    public init?(parsing text: String) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            guard !path.isEmpty else {
                return nil
            }
            self = .unix(path: path)
            return
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                return nil
            }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                return nil
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else {
                return nil
            }
        }
        guard !host.isEmpty, !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(portText),
            (0...65535).contains(port)
        else {
            return nil
        }
        self = .tcp(host: String(host), port: port)
    }

    /// The text ``init(parsing:)`` reads: `host:port`, `[::1]:port` or `unix:/path`.
    public var description: String {
        switch self {
        case .tcp(let host, let port):
            host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path):
            "unix:\(path)"
        }
    }
}

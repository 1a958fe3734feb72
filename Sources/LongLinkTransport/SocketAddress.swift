#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A resolved address: IPv4 or IPv6 with a port, or a Unix-domain socket path.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    enum Storage: Hashable, Sendable {
        /// `address` as `in_addr.s_addr` holds it (network byte order); `port` in host order.
        case ipv4(address: UInt32, port: UInt16)
        /// The 16 address bytes as two words loaded from `in6_addr` (memory order); `port` in host order.
        case ipv6(high: UInt64, low: UInt64, port: UInt16, scopeID: UInt32)
        case unix(path: String)
    }

    let storage: Storage

    init(storage: Storage) {
        self.storage = storage
    }

    /// Parses a numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`, `fe80::1%eth0`; no brackets, no names).
    ///
    /// Returns nil when `ipAddress` is not a numeric address or `port` is outside `0...65535`.
    public init?(ipAddress: String, port: Int) {
        guard (0...65535).contains(port) else {
            return nil
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, ipAddress, &v4) == 1 {
            self.init(storage: .ipv4(address: v4.s_addr, port: UInt16(port)))
            return
        }
        var text = Substring(ipAddress)
        var scopeID: UInt32 = 0
        if let percent = text.firstIndex(of: "%") {
            let zone = String(text[text.index(after: percent)...])
            text = text[..<percent]
            if let numeric = UInt32(zone) {
                scopeID = numeric
            } else {
                scopeID = if_nametoindex(zone)
                guard scopeID != 0 else {
                    return nil
                }
            }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, String(text), &v6) == 1 else {
            return nil
        }
        let (high, low) = withUnsafeBytes(of: &v6) { bytes in
            (
                bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            )
        }
        self.init(storage: .ipv6(high: high, low: low, port: UInt16(port), scopeID: scopeID))
    }

    /// The address of a Unix-domain socket at `path`.
    public init(unixPath path: String) {
        self.init(storage: .unix(path: path))
    }

    /// The port, or nil for a Unix-domain socket.
    public var port: Int? {
        switch storage {
        case .ipv4(_, let port), .ipv6(_, _, let port, _): Int(port)
        case .unix: nil
        }
    }

    /// The numeric host (`127.0.0.1`, `::1`), or the path of a Unix-domain socket.
    public var host: String {
        switch storage {
        case .ipv4(let address, _):
            let raw = in_addr(s_addr: address)
            return withUnsafeBytes(of: raw) { Self.format(family: AF_INET, $0.baseAddress!) }
        case .ipv6(let high, let low, _, _):
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { bytes in
                bytes.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            }
            return withUnsafeBytes(of: raw) { Self.format(family: AF_INET6, $0.baseAddress!) }
        case .unix(let path):
            return path
        }
    }

    /// True for IPv6 addresses.
    public var isIPv6: Bool {
        if case .ipv6 = storage {
            return true
        }
        return false
    }

    /// True for Unix-domain socket paths.
    public var isUnixDomain: Bool {
        if case .unix = storage {
            return true
        }
        return false
    }

    /// `127.0.0.1:443`, `[::1]:443`, or `unix:/path/to.sock`.
    public var description: String {
        switch storage {
        case .ipv4(_, let port): "\(host):\(port)"
        case .ipv6(_, _, let port, _): "[\(host)]:\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }

    private static func format(family: Int32, _ raw: UnsafeRawPointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(family, raw, &buffer, socklen_t(buffer.count)) != nil else {
            return "?"
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

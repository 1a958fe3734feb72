#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension SocketAddress {
    /// The longest Unix-domain socket path (without its terminating NUL) that fits `sockaddr_un`.
    static let maximumUnixPathLength: Int = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// The address family (`AF_INET`, `AF_INET6`, `AF_UNIX`).
    var family: Int32 {
        switch storage {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
    }

    /// Reads a `sockaddr` the kernel filled in. Nil for families the transport does not use.
    init?(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            guard Int(length) >= MemoryLayout<sockaddr_in>.size else {
                return nil
            }
            let v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            self.init(storage: .ipv4(address: v4.sin_addr.s_addr, port: UInt16(bigEndian: v4.sin_port)))
        case AF_INET6:
            guard Int(length) >= MemoryLayout<sockaddr_in6>.size else {
                return nil
            }
            var v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            let (high, low) = withUnsafeBytes(of: &v6.sin6_addr) { bytes in
                (
                    bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                    bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                )
            }
            self.init(
                storage: .ipv6(
                    high: high, low: low, port: UInt16(bigEndian: v6.sin6_port), scopeID: v6.sin6_scope_id))
        case AF_UNIX:
            let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
            let pathLength = max(0, min(Int(length) - pathOffset, Self.maximumUnixPathLength + 1))
            let bytes = UnsafeRawPointer(address).advanced(by: pathOffset).assumingMemoryBound(to: UInt8.self)
            let path = UnsafeBufferPointer(start: bytes, count: pathLength).prefix { $0 != 0 }
            self.init(storage: .unix(path: String(decoding: path, as: UTF8.self)))
        default:
            return nil
        }
    }

    /// Calls `body` with this address as a `sockaddr`. A Unix path too long for `sockaddr_un` is truncated;
    /// callers check ``maximumUnixPathLength`` first.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch storage {
        case .ipv4(let address, let port):
            var raw = sockaddr_in()
            #if !os(Linux)
                raw.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = port.bigEndian
            raw.sin_addr = in_addr(s_addr: address)
            return withUnsafePointer(to: &raw) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6(let high, let low, let port, let scopeID):
            var raw = sockaddr_in6()
            #if !os(Linux)
                raw.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
            #endif
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = port.bigEndian
            raw.sin6_scope_id = scopeID
            withUnsafeMutableBytes(of: &raw.sin6_addr) { bytes in
                bytes.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            }
            return withUnsafePointer(to: &raw) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        case .unix(let path):
            var raw = sockaddr_un()
            raw.sun_family = sa_family_t(AF_UNIX)
            let utf8 = Array(path.utf8.prefix(Self.maximumUnixPathLength))
            withUnsafeMutableBytes(of: &raw.sun_path) { bytes in
                bytes.copyBytes(from: utf8)
            }
            let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
            let length = pathOffset + utf8.count + 1
            #if !os(Linux)
                raw.sun_len = UInt8(length)
            #endif
            return withUnsafePointer(to: &raw) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(length))
                }
            }
        }
    }
}

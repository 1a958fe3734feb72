#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blocking TCP connection to an IPv4 address with bounded reads and writes, for the tool's,
/// the tests' and the benchmarks' helpers that speak a simple protocol without an event loop
/// (``RedisProbe``, the tests' HTTP exchange with a metrics page or Prometheus).
package final class BlockingSocket {
    /// The connection or an exchange failed.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The socket's descriptor (closed when this is released).
    package let descriptor: Int32

    /// Connects to `host:port` (an IPv4 address; names are not resolved), each read and write then
    /// bounded by `timeout`.
    package init(host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(10)) throws(Failure) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw Failure(description: "\(host) is not an IPv4 address")
        }
        #if os(Linux)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        let micros =
            Int(timeout.components.seconds) * 1_000_000 + Int(timeout.components.attoseconds / 1_000_000_000_000)
        var limit = timeval(tv_sec: .init(micros / 1_000_000), tv_usec: .init(micros % 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let failure = errno
            close(fd)
            throw Failure(description: "connect to \(host):\(port): errno \(failure)")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Writes all of `bytes`.
    package func write(_ bytes: [UInt8]) throws(Failure) {
        #if os(Linux)
            let flags = Int32(MSG_NOSIGNAL)  // a peer that closed must not kill the process with SIGPIPE
        #else
            let flags: Int32 = 0
        #endif
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, flags) }
            guard written > 0 else { throw Failure(description: "write: errno \(errno)") }
            sent += written
        }
    }

    /// Reads what is there (waiting for at least a byte, within the timeout): empty once the peer
    /// closed.
    package func read(atMost count: Int = 64 << 10) throws(Failure) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: count)
        let read = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard read >= 0 else { throw Failure(description: "read: errno \(errno)") }
        return Array(chunk[..<read])
    }

    /// Everything until the peer closes.
    package func readToEnd() throws(Failure) -> [UInt8] {
        var received: [UInt8] = []
        while true {
            let chunk = try read()
            if chunk.isEmpty { return received }
            received += chunk
        }
    }
}

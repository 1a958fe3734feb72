import LongLinkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin wrappers over the system calls of the transport.
///
/// Every socket the transport creates is non-blocking and close-on-exec, and never raises `SIGPIPE`
/// (`MSG_NOSIGNAL` on Linux, `SO_NOSIGPIPE` on Darwin), so none of these calls blocks.
enum Sys {
    /// `CLOCK_MONOTONIC` in nanoseconds.
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// A duration as whole nanoseconds, clamped to `0...UInt64.max / 2`.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, duration.nanoseconds(clampedTo: .max)))
    }

    /// The text of an `errno` value.
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code) else {
            return "errno \(code)"
        }
        return String(cString: text)
    }

    #if os(Linux)
        static let streamType = Int32(SOCK_STREAM.rawValue)
    #else
        static let streamType = SOCK_STREAM
    #endif

    /// A new non-blocking, close-on-exec stream socket of `family`.
    static func makeSocket(family: Int32) throws(LongLinkError) -> Int32 {
        #if os(Linux)
            let fd = socket(family, streamType | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                throw LongLinkError.system(errno: errno, function: "socket")
            }
        #else
            let fd = socket(family, streamType, 0)
            guard fd >= 0 else {
                throw LongLinkError.system(errno: errno, function: "socket")
            }
            do throws(LongLinkError) {
                try prepareAcceptedOrCreated(fd)
            } catch {
                Sys.close(fd)
                throw error
            }
        #endif
        return fd
    }

    /// Makes a socket non-blocking and close-on-exec where `accept4`/`SOCK_NONBLOCK` are missing, and
    /// turns off `SIGPIPE` on Darwin.
    static func prepareAcceptedOrCreated(_ fd: Int32) throws(LongLinkError) {
        #if !os(Linux)
            let flags = fcntl(fd, F_GETFL)
            guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                throw LongLinkError.system(errno: errno, function: "fcntl")
            }
            guard fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 else {
                throw LongLinkError.system(errno: errno, function: "fcntl")
            }
            var one: Int32 = 1
            guard setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw LongLinkError.system(errno: errno, function: "setsockopt(SO_NOSIGPIPE)")
            }
        #endif
    }

    /// Accepts one connection; returns the new descriptor (already non-blocking) or -1 with `errno` set.
    static func accept(_ listenFD: Int32) -> Int32 {
        #if os(Linux)
            return LinuxSystem.acceptNonBlocking(listenFD)
        #else
            let fd = Darwin.accept(listenFD, nil, nil)
            if fd >= 0 {
                do throws(LongLinkError) {
                    try prepareAcceptedOrCreated(fd)
                } catch {
                    Sys.close(fd)
                    return -1
                }
            }
            return fd
        #endif
    }

    @discardableResult
    static func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) -> Bool {
        var value = value
        return setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    static func setNoDelay(_ fd: Int32, _ on: Bool) {
        setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: on ? 1 : 0)
    }

    static func setReuseAddress(_ fd: Int32) {
        setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
    }

    /// `SO_REUSEPORT`: sockets of the same user that all set it may bind one port (see ``ReservedPort``).
    static func setReusePort(_ fd: Int32) {
        setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, value: 1)
    }

    /// `SO_LINGER` with a zero timeout: the next `close` sends RST instead of FIN.
    static func setResetOnClose(_ fd: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    }

    /// The pending error of a socket (`SO_ERROR`), 0 when none.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else {
            return errno
        }
        return value
    }

    /// One vectored write of `count` iovecs; the byte count, or -1 with `errno` set. Never raises `SIGPIPE`.
    static func writeVector(_ fd: Int32, _ iovecs: UnsafeMutablePointer<iovec>, _ count: Int) -> Int {
        #if os(Linux)
            var message = msghdr()
            message.msg_iov = iovecs
            message.msg_iovlen = count
            return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
        #else
            // SO_NOSIGPIPE is set on every socket.
            return writev(fd, iovecs, Int32(count))
        #endif
    }

    /// Shuts the write side of a socket (the peer reads end of stream); false when it failed.
    static func shutdownWrite(_ fd: Int32) -> Bool {
        #if os(Linux)
            return Glibc.shutdown(fd, Int32(SHUT_WR)) == 0
        #else
            return Darwin.shutdown(fd, SHUT_WR) == 0
        #endif
    }

    static func close(_ fd: Int32) {
        #if os(Linux)
            _ = Glibc.close(fd)
        #else
            _ = Darwin.close(fd)
        #endif
    }

    static func localAddress(_ fd: Int32) -> SocketAddress? {
        address(fd, getsockname)
    }

    static func remoteAddress(_ fd: Int32) -> SocketAddress? {
        address(fd, getpeername)
    }

    private static func address(
        _ fd: Int32,
        _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                guard call(fd, address, &length) == 0 else {
                    return nil
                }
                return SocketAddress(address, length: length)
            }
        }
    }
}

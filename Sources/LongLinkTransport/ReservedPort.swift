import LongLinkCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP port held for a server that is not listening yet: a socket bound to it with
/// `SO_REUSEPORT`, never listening.
///
/// For tests that need a port before the server exists (a client dialling while offline) or
/// across a restart. While the reservation lives, nothing else can bind the port (the kernel
/// hands it to no `bind` to port 0 and to no outgoing connection as its source port), a
/// connection to it is refused while no server listens, and a server started with
/// `ServerConfiguration.reusesPort` (a listener bound with `reusePort`) binds it beside the reservation. A port chosen, released
/// and bound later could be taken meanwhile by another test.
package final class ReservedPort: Sendable {
    /// The bound address, with the port the kernel chose.
    package let address: SocketAddress
    private let fd: Int32
    private let released = Atomic<Bool>(false)

    /// The reserved port.
    package var port: Int { address.port ?? 0 }

    /// Binds a socket to `host` (an IP address, IPv4 or IPv6) and a port the kernel chooses.
    package init(host: String = "127.0.0.1") throws(LongLinkError) {
        guard let wanted = SocketAddress(ipAddress: host, port: 0) else {
            throw LongLinkError(
                code: .invalidConfiguration, message: "a reserved port needs an IP address, not \"\(host)\"")
        }
        let fd = try Sys.makeSocket(family: wanted.family)
        // Not SO_REUSEADDR: a socket bound with it could share the port with this one (neither listening).
        Sys.setReusePort(fd)
        let bound = wanted.withSockAddr { pointer, length in reservationBind(fd, pointer, length) }
        guard bound == 0, let address = Sys.localAddress(fd) else {
            let error = LongLinkError.system(errno: errno, function: "bind to \(wanted)")
            Sys.close(fd)
            throw error
        }
        self.fd = fd
        self.address = address
    }

    deinit {
        release()
    }

    /// Gives the port up (once; later calls do nothing). A server bound to it keeps listening.
    package func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Sys.close(fd)
    }
}

/// `bind(2)`, named apart from the methods called `bind`.
private func reservationBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
        Glibc.bind(fd, address, length)
    #else
        Darwin.bind(fd, address, length)
    #endif
}

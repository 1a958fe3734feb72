import LongLinkCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A listening socket (TCP or Unix-domain) whose accepted connections are spread over an ``EventLoopGroup``.
///
/// The listener accepts on one loop of the group and hands each new connection to the group's next loop
/// (round robin), where `onAccept` is called, so the server can call ``Connection/start(handler:)`` right
/// there.
public final class Listener: @unchecked Sendable {
    /// The bound address, with the real port when bound to port 0.
    public let localAddress: SocketAddress

    private let group: EventLoopGroup
    private let loop: EventLoop
    private let options: ConnectionOptions
    private let onAccept: @Sendable (Connection) -> Void
    /// Asked for each accepted TLS socket before anything is made for it (see `bind`).
    private let admitHandshake: (@Sendable () -> Bool)?
    /// Gives back a place `admitHandshake` reserved, for a socket that never started its handshake.
    private let handshakeEnded: (@Sendable () -> Void)?
    /// The socket file this listener created (and removes on close).
    private let createdPath: String?
    private let closed = Atomic<Bool>(false)

    // Loop thread only.
    private var fd: Int32
    private var resourceID: UInt64?
    private var resumeTimer: EventLoopTimer?

    private init(
        fd: Int32, localAddress: SocketAddress, group: EventLoopGroup, loop: EventLoop, options: ConnectionOptions,
        createdPath: String?, admitHandshake: (@Sendable () -> Bool)? = nil,
        handshakeEnded: (@Sendable () -> Void)? = nil, onAccept: @escaping @Sendable (Connection) -> Void
    ) {
        self.fd = fd
        self.localAddress = localAddress
        self.group = group
        self.loop = loop
        self.options = options
        self.createdPath = createdPath
        self.onAccept = onAccept
        self.admitHandshake = admitHandshake
        self.handshakeEnded = handshakeEnded
    }

    /// Binds to `endpoint`, listens, and starts accepting.
    ///
    /// - Parameters:
    ///   - endpoint: a TCP host (a name is resolved; the first address is used; `0.0.0.0` or `::` for all
    ///     interfaces) and port (0 for any free port), or a Unix socket path. A stale socket file at the path
    ///     (one nobody listens on) is removed first; a live one is an error.
    ///   - group: the loops that run the accepted connections.
    ///   - backlog: the kernel's queue of connections not yet accepted.
    ///   - options: the options of every accepted connection.
    ///   - onAccept: called on the accepted connection's loop.
    /// - Throws: `invalidConfiguration` for bad options, ports or paths; `addressResolutionFailed`; `shutdown`
    ///   when the group's loop has stopped; `ioFailure` (for example, the address is in use).
    public static func bind(
        to endpoint: Endpoint, group: EventLoopGroup = .shared, backlog: Int32 = 1024,
        options: ConnectionOptions = .init(), onAccept: @escaping @Sendable (Connection) -> Void
    ) async throws(LongLinkError) -> Listener {
        try await bind(to: endpoint, group: group, backlog: backlog, options: options, tls: nil, onAccept: onAccept)
    }

    /// Binds as ``bind(to:group:backlog:options:onAccept:)`` does; with `tls`, every accepted
    /// connection first runs a TLS handshake with the context `tls` returns at that moment, and
    /// reaches `onAccept` only once established. A failed or timed-out handshake (see
    /// ``ServerTLSConfiguration/handshakeTimeout``) closes the connection and is reported to
    /// `onHandshakeFailure`, on the connection's loop. `admitHandshake`, when given, is asked on
    /// the accepting loop for each new socket: false closes it there at once (an idle socket then
    /// costs neither a connection, an SSL object nor a descriptor for the handshake timeout); true
    /// reserves a place that `handshakeEnded` gives back when that handshake ends, however it ends.
    /// `reusePort` binds a TCP port with `SO_REUSEPORT`, beside the ``ReservedPort`` that holds it.
    package static func bind(
        to endpoint: Endpoint, group: EventLoopGroup = .shared, backlog: Int32 = 1024,
        options: ConnectionOptions = .init(), reusePort: Bool = false, tls: (@Sendable () -> TLSContext?)?,
        onHandshakeFailure: (@Sendable (LongLinkError) -> Void)? = nil,
        admitHandshake: (@Sendable () -> Bool)? = nil, handshakeEnded: (@Sendable () -> Void)? = nil,
        onAccept: @escaping @Sendable (Connection) -> Void
    ) async throws(LongLinkError) -> Listener {
        try options.validate()
        let address: SocketAddress
        switch endpoint {
        case .tcp(let host, let port):
            guard let first = try await Resolver.resolve(host: host, port: port).first else {
                throw LongLinkError(code: .addressResolutionFailed, message: "\"\(host)\" has no address")
            }
            address = first
        case .unix(let path):
            guard !path.isEmpty, path.utf8.count <= SocketAddress.maximumUnixPathLength else {
                throw LongLinkError(
                    code: .invalidConfiguration,
                    message: "a Unix socket path must have 1...\(SocketAddress.maximumUnixPathLength) bytes")
            }
            address = SocketAddress(unixPath: path)
        }

        let fd = try Sys.makeSocket(family: address.family)
        var createdPath: String?
        do throws(LongLinkError) {
            if case .unix(let path) = address.storage {
                try removeStaleSocketFile(path)
            } else {
                Sys.setReuseAddress(fd)
                if reusePort { Sys.setReusePort(fd) }
            }
            let bound = address.withSockAddr { pointer, length in
                systemBind(fd, pointer, length)
            }
            guard bound == 0 else {
                throw LongLinkError.system(errno: errno, function: "bind to \(address)")
            }
            if case .unix(let path) = address.storage {
                createdPath = path
            }
            guard listen(fd, backlog) == 0 else {
                throw LongLinkError.system(errno: errno, function: "listen")
            }
        } catch {
            Sys.close(fd)
            if let createdPath {
                unlink(createdPath)
            }
            throw error
        }

        let loop = group.next()
        // Only a TLS listener has handshakes to bound.
        let handshakeEnded = tls == nil ? nil : handshakeEnded
        let listener = Listener(
            fd: fd, localAddress: Sys.localAddress(fd) ?? address, group: group, loop: loop, options: options,
            createdPath: createdPath, admitHandshake: tls == nil ? nil : admitHandshake,
            handshakeEnded: handshakeEnded,
            onAccept: { connection in
                // The context is asked for once per connection, so a server can swap certificates
                // while it runs.
                guard let context = tls?() else {
                    handshakeEnded?()
                    onAccept(connection)
                    return
                }
                connection.startTLS(context, serverName: nil, timeout: context.handshakeTimeout) { error in
                    handshakeEnded?()
                    if let error {
                        onHandshakeFailure?(error)
                    } else {
                        onAccept(connection)
                    }
                }
            })
        let registered = OneShot<LongLinkError?>()
        if !loop.tryExecute({ registered.resume(listener.register()) }) {
            registered.resume(.loopShutDown())
        }
        if let error = await registered.value() {
            listener.closeAfterFailedRegistration()
            throw error
        }
        return listener
    }

    /// Stops accepting and closes the socket; connections already accepted are not affected. Removes the
    /// Unix socket file this listener created. Any thread; idempotent.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else {
            return
        }
        if let createdPath {
            unlink(createdPath)
        }
        if loop.inEventLoop {
            closeSocket()
        } else {
            loop.tryExecute { [self] in
                closeSocket()
            }
        }
    }

    /// Stops accepting and returns once the listening socket is closed, so that the address can
    /// be bound again at once (a server restarting on the same port).
    public func closeAndWait() async {
        if loop.inEventLoop {
            close()
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = loop.tryExecute { [self] in
                close()
                continuation.resume()
            }
            if !queued {
                close()
                continuation.resume()
            }
        }
    }

    // MARK: - Loop side

    private func register() -> LongLinkError? {
        guard let id = loop.adopt(self) else {
            return .loopShutDown()
        }
        resourceID = id
        do {
            try loop.selector.add(fd: fd, id: id, interest: closed.load(ordering: .acquiring) ? [] : .readable)
        } catch {
            loop.release(id)
            resourceID = nil
            return error
        }
        return nil
    }

    /// Registration failed, so the loop never owned the socket and it can be closed from here.
    private func closeAfterFailedRegistration() {
        closed.store(true, ordering: .releasing)
        Sys.close(fd)
        if let createdPath {
            unlink(createdPath)
        }
    }

    private func closeSocket() {
        guard fd >= 0 else {
            return
        }
        if let resumeTimer {
            loop.cancelTimer(resumeTimer)
            self.resumeTimer = nil
        }
        loop.selector.remove(fd: fd)
        Sys.close(fd)
        fd = -1
        if let resourceID {
            loop.release(resourceID)
            self.resourceID = nil
        }
    }

    private func accepted(_ child: Int32) {
        if let admitHandshake, !admitHandshake() {
            Sys.close(child)
            return
        }
        let target = group.next()
        let options = options
        let onAccept = onAccept
        let handshakeEnded = handshakeEnded
        let delivered = target.tryExecute {
            guard let connection = try? Connection.adopt(fd: child, on: target, options: options) else {
                handshakeEnded?()
                return
            }
            onAccept(connection)
        }
        if !delivered {
            Sys.close(child)
            handshakeEnded?()
        }
    }

    /// Out of descriptors or buffers: stop accepting for a moment instead of spinning on a readable socket.
    private func pauseAccepting() {
        guard let resourceID, resumeTimer == nil else {
            return
        }
        try? loop.selector.modify(fd: fd, id: resourceID, interest: [])
        resumeTimer = loop.scheduleTimer(after: .milliseconds(100)) { [self] in
            resumeTimer = nil
            guard fd >= 0, let resourceID = self.resourceID else {
                return
            }
            try? loop.selector.modify(fd: fd, id: resourceID, interest: .readable)
        }
    }

    private static func removeStaleSocketFile(_ path: String) throws(LongLinkError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            return
        }
        // Only a socket file is ever removed, and only when nobody accepts on it.
        guard info.st_mode & 0o170000 == 0o140000 else {
            return
        }
        let probe = try Sys.makeSocket(family: AF_UNIX)
        defer { Sys.close(probe) }
        let status = SocketAddress(unixPath: path).withSockAddr { pointer, length in
            connect(probe, pointer, length)
        }
        let code = status == 0 ? 0 : errno
        if status == 0 || code == EAGAIN || code == EINPROGRESS {
            throw LongLinkError(
                code: .ioFailure, message: "\(path) is in use by a listening socket",
                underlying: SystemCallError(errno: EADDRINUSE, function: "bind"))
        }
        unlink(path)
    }
}

extension Listener: LoopResource {
    func handleEvents(_ events: IOEvents) {
        for _ in 0..<64 {
            guard fd >= 0 else {
                return
            }
            let child = Sys.accept(fd)
            if child >= 0 {
                accepted(child)
                continue
            }
            switch errno {
            case EINTR, ECONNABORTED:
                continue
            case EAGAIN, EWOULDBLOCK:
                return
            default:
                // EMFILE, ENFILE, ENOBUFS, ENOMEM, or something unexpected.
                pauseAccepting()
                return
            }
        }
    }

    func closeForShutdown(_ error: LongLinkError) {
        close()
        closeSocket()
    }
}

/// `bind(2)`, named apart from ``Listener/bind(to:group:backlog:options:onAccept:)``.
private func systemBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
        Glibc.bind(fd, address, length)
    #else
        Darwin.bind(fd, address, length)
    #endif
}

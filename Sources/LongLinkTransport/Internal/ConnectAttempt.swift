import LongLinkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One ``Connection/connect(to:options:on:)``: resolve, then a non-blocking connect to each address in turn,
/// all under one timer.
///
/// The result is a ``OneShot``, so the loop (success or failure), the timer and the caller's cancellation can
/// race to finish it; whoever comes second is ignored, and a connection that wins a lost race is closed.
/// Everything but ``run()`` and ``cancel()`` runs on the loop.
final class ConnectAttempt: @unchecked Sendable {
    private let endpoint: Endpoint
    private let options: ConnectionOptions
    private let tls: TLSContext?
    private let loop: EventLoop
    private let result = OneShot<Result<Connection, LongLinkError>>()

    // Loop thread only.
    private var resourceID: UInt64?
    private var timer: EventLoopTimer?
    private var addresses: [SocketAddress] = []
    private var nextAddress = 0
    private var fd: Int32 = -1
    private var lastError: LongLinkError?
    private var finished = false
    /// The connection while its TLS handshake runs.
    private var handshaking: Connection?

    init(endpoint: Endpoint, options: ConnectionOptions, tls: TLSContext?, loop: EventLoop) {
        self.endpoint = endpoint
        self.options = options
        self.tls = tls
        self.loop = loop
    }

    /// Starts the attempt on the loop and waits for its outcome.
    func run() async -> Result<Connection, LongLinkError> {
        if !loop.tryExecute({ [self] in begin() }) {
            result.resume(.failure(.loopShutDown()))
        }
        return await result.value()
    }

    /// The caller's task was cancelled.
    func cancel() {
        if result.resume(.failure(.taskCancelled("connecting to \(endpoint)"))) {
            loop.tryExecute { [self] in
                fail(.taskCancelled("connecting to \(endpoint)"))
            }
        }
    }

    private func begin() {
        guard !result.isResolved else {
            return
        }
        guard let id = loop.adopt(self) else {
            fail(.loopShutDown())
            return
        }
        resourceID = id
        let timeout = options.connectTimeout
        timer = loop.scheduleTimer(after: timeout) { [self] in
            if handshaking != nil {
                fail(
                    .tls(
                        .handshakeTimeout,
                        "the TLS handshake with \(endpoint) did not finish within the connect timeout (\(timeout))"))
            } else {
                fail(
                    LongLinkError(
                        code: .connectTimeout, message: "connecting to \(endpoint) took longer than \(timeout)"))
            }
        }
        switch endpoint {
        case .unix(let path):
            guard !path.isEmpty, path.utf8.count <= SocketAddress.maximumUnixPathLength else {
                fail(
                    LongLinkError(
                        code: .invalidConfiguration,
                        message: "a Unix socket path must have 1...\(SocketAddress.maximumUnixPathLength) bytes"))
                return
            }
            addresses = [SocketAddress(unixPath: path)]
            tryNextAddress()
        case .tcp(let host, let port):
            guard (0...65535).contains(port) else {
                fail(LongLinkError(code: .invalidConfiguration, message: "port \(port) is outside 0...65535"))
                return
            }
            if let literal = SocketAddress(ipAddress: host, port: port) {
                addresses = [literal]
                tryNextAddress()
            } else {
                ResolverPool.shared.lookup(host: host, port: port) { [self] resolved in
                    loop.tryExecute { [self] in
                        didResolve(resolved)
                    }
                }
            }
        }
    }

    private func didResolve(_ resolved: Result<[SocketAddress], LongLinkError>) {
        guard !finished else {
            return
        }
        switch resolved {
        case .success(let list):
            addresses = list
            tryNextAddress()
        case .failure(let error):
            fail(error)
        }
    }

    private func tryNextAddress() {
        while !finished && nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            let socket: Int32
            do {
                socket = try Sys.makeSocket(family: address.family)
            } catch {
                lastError = error
                continue
            }
            let status = address.withSockAddr { pointer, length in
                connect(socket, pointer, length)
            }
            let code = status == 0 ? 0 : errno
            if status == 0 {
                fd = socket
                succeed()
                return
            }
            if code == EINPROGRESS || code == EINTR {
                do {
                    try loop.selector.add(fd: socket, id: resourceID!, interest: .writable)
                    fd = socket
                    return
                } catch {
                    lastError = error
                    Sys.close(socket)
                    continue
                }
            }
            Sys.close(socket)
            if address.isUnixDomain && (code == EAGAIN || code == ENOENT) {
                // Nothing listens there (no socket file), or its accept queue is full.
                lastError = LongLinkError(
                    code: .connectionRefused,
                    message: code == ENOENT ? "no socket at \(address)" : "\(address) has no room in its accept queue",
                    underlying: SystemCallError(errno: code, function: "connect"))
            } else {
                lastError = .system(errno: code, function: "connect to \(address)", connecting: true)
            }
        }
        if !finished {
            fail(lastError ?? LongLinkError(code: .addressResolutionFailed, message: "no address to connect to"))
        }
    }

    private func succeed() {
        let socket = fd
        fd = -1
        loop.selector.remove(fd: socket)
        let connection: Connection
        do {
            connection = try Connection.adopt(fd: socket, on: loop, options: options)
        } catch {
            cleanUp()
            result.resume(.failure(error))
            return
        }
        guard let tls else {
            deliver(connection)
            return
        }
        // The connect timer keeps running: it bounds the handshake too.
        handshaking = connection
        let serverName: String? =
            switch endpoint {
            case .tcp(let host, _): host
            case .unix: nil
            }
        connection.startTLS(tls, serverName: serverName, timeout: nil) { [self] error in
            guard handshaking === connection else { return }
            handshaking = nil
            if let error {
                fail(error)
            } else {
                deliver(connection)
            }
        }
    }

    private func deliver(_ connection: Connection) {
        cleanUp()
        if !result.resume(.success(connection)) {
            // The caller gave up (cancelled or timed out) in the meantime.
            connection.close(.immediately)
        }
    }

    private func fail(_ error: LongLinkError) {
        guard !finished else {
            return
        }
        if fd >= 0 {
            loop.selector.remove(fd: fd)
            Sys.close(fd)
            fd = -1
        }
        cleanUp()
        result.resume(.failure(error))
        if let connection = handshaking {
            handshaking = nil
            connection.close(.immediately, error: error)
        }
    }

    private func cleanUp() {
        finished = true
        if let timer {
            loop.cancelTimer(timer)
            self.timer = nil
        }
        if let resourceID {
            loop.release(resourceID)
            self.resourceID = nil
        }
    }
}

extension ConnectAttempt: LoopResource {
    func handleEvents(_ events: IOEvents) {
        guard !finished, fd >= 0 else {
            return
        }
        let code = Sys.pendingError(fd)
        if code == 0 {
            succeed()
            return
        }
        loop.selector.remove(fd: fd)
        Sys.close(fd)
        fd = -1
        lastError = .system(errno: code, function: "connect to \(addresses[nextAddress - 1])", connecting: true)
        tryNextAddress()
    }

    func closeForShutdown(_ error: LongLinkError) {
        fail(error)
    }
}

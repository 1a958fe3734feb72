import LongLinkCore
import LongLinkTestSupport
import Testing

@testable import LongLinkTransport
@testable import LongLinkWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Lets `loop` run `count` full iterations of queued work (each round trip is one hop onto the loop).
func roundTrips(_ loop: EventLoop, _ count: Int = 3) async {
    for _ in 0..<count {
        await onLoop(loop) {}
    }
}

/// Waits until a `send` on `connection` is suspended waiting for writability (polling the loop, bounded).
func waitForSuspendedSend(_ connection: Connection) async throws {
    for _ in 0..<10_000 {
        if await onLoop(connection.eventLoop, { connection.waitingSendCount > 0 }) {
            return
        }
        await Task.yield()
    }
    Issue.record("no send suspended")
    throw ConditionTimedOut(what: "a suspended send")
}

/// What a ``RecordingHandler`` saw.
struct HandlerLog: Sendable {
    var bytes: [UInt8] = []
    var byteCount = 0
    /// Offsets where the received bytes did not match ``pattern(_:)`` (when checking the pattern).
    var patternMismatches = 0
    var reads = 0
    var closeCount = 0
    var closeCode: LongLinkError.Code?
    var closeError: LongLinkError?
    var closedCleanly = false
    var writabilityChanges: [Bool] = []
    var callbacksOffLoop = 0
    var callbacksAfterClose = 0
}

/// The byte at offset `index` of a test stream: period 251, so reordered or lost 64 KiB chunks show.
func pattern(_ index: Int) -> UInt8 {
    UInt8(truncatingIfNeeded: index % 251)
}

/// The pattern from offset 0 to 251 + 64 KiB: any run of up to 64 KiB of the stream is a slice of it.
private let patternTable: [UInt8] = (0..<(251 + (1 << 16))).map(pattern)

/// `count` bytes of the test stream from offset `start`.
func patternBytes(from start: Int, count: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    var offset = start
    while offset < start + count {
        let length = min(1 << 16, start + count - offset)
        bytes.append(contentsOf: patternTable[(offset % 251)..<(offset % 251) + length])
        offset += length
    }
    return bytes
}

/// How many runs (of up to 64 KiB) of `bytes`, found at stream offset `start`, differ from the pattern.
func patternMismatches(_ bytes: UnsafeRawBufferPointer, at start: Int) -> Int {
    var mismatches = 0
    var index = 0
    patternTable.withUnsafeBytes { table in
        while index < bytes.count {
            let length = min(1 << 16, bytes.count - index)
            let expected = UnsafeRawBufferPointer(
                rebasing: table[((start + index) % 251)..<((start + index) % 251) + length])
            if memcmp(bytes.baseAddress! + index, expected.baseAddress!, length) != 0 {
                mismatches += 1
            }
            index += length
        }
    }
    return mismatches
}

/// Records every callback; optionally echoes what it reads, or checks it against ``pattern(_:)`` instead of
/// keeping it.
final class RecordingHandler: ConnectionHandler, Sendable {
    let log = Watched(HandlerLog())
    let echo: Bool
    let checkPattern: Bool

    init(echo: Bool = false, checkPattern: Bool = false) {
        self.echo = echo
        self.checkPattern = checkPattern
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        let onLoop = connection.eventLoop.inEventLoop
        log.update { log in
            if !onLoop {
                log.callbacksOffLoop += 1
            }
            if log.closeCount > 0 {
                log.callbacksAfterClose += 1
            }
            if checkPattern {
                log.patternMismatches += patternMismatches(bytes, at: log.byteCount)
            } else {
                log.bytes.append(contentsOf: bytes)
            }
            log.byteCount += bytes.count
            log.reads += 1
        }
        if echo {
            connection.write(Array(bytes))
        }
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        let writable = connection.isWritable
        let onLoop = connection.eventLoop.inEventLoop
        log.update { log in
            if !onLoop {
                log.callbacksOffLoop += 1
            }
            log.writabilityChanges.append(writable)
        }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        let onLoop = connection.eventLoop.inEventLoop
        log.update { log in
            if !onLoop {
                log.callbacksOffLoop += 1
            }
            log.closeCount += 1
            log.closeCode = error?.code
            log.closeError = error
            log.closedCleanly = error == nil
        }
    }

    /// Waits for `didCloseWith`.
    @discardableResult
    func waitForClose(_ limit: Duration = .seconds(5)) async throws -> HandlerLog {
        try await log.wait("didCloseWith", within: limit) { $0.closeCount > 0 }
    }

    /// Waits until `count` bytes arrived.
    @discardableResult
    func waitForBytes(_ count: Int, _ limit: Duration = .seconds(10)) async throws -> HandlerLog {
        try await log.wait("\(count) bytes", within: limit) { $0.byteCount >= count }
    }
}

/// A listener whose accepted connections are recorded (and started with a handler from `makeHandler`).
final class TestServer: Sendable {
    let listener: Listener
    let accepted = Watched<[Connection]>([])
    let handlers = Watched<[RecordingHandler]>([])
    let acceptedOnWrongLoop = Watched(0)

    private init(listener: Listener) {
        self.listener = listener
    }

    static func start(
        _ endpoint: Endpoint, group: EventLoopGroup, options: ConnectionOptions = .init(), backlog: Int32 = 128,
        pauseReading: Bool = false, reusePort: Bool = false,
        makeHandler: @escaping @Sendable () -> RecordingHandler = { RecordingHandler() }
    ) async throws -> TestServer {
        let box = Locked<TestServer?>(nil)
        let pending = Watched<[Connection]>([])
        let listener = try await Listener.bind(
            to: endpoint, group: group, backlog: backlog, options: options, reusePort: reusePort, tls: nil
        ) { connection in
            let handler = makeHandler()
            connection.start(handler: handler)
            if pauseReading {
                connection.pauseReading()
            }
            let onLoop = connection.eventLoop.inEventLoop
            if let server = box.withLock({ $0 }) {
                server.record(connection, handler, onLoop: onLoop)
            } else {
                pending.update { $0.append(connection) }
            }
        }
        let server = TestServer(listener: listener)
        box.withLock { $0 = server }
        #expect(pending.value.isEmpty, "no connection before bind returned")
        return server
    }

    private func record(_ connection: Connection, _ handler: RecordingHandler, onLoop: Bool) {
        if !onLoop {
            acceptedOnWrongLoop.update { $0 += 1 }
        }
        handlers.update { $0.append(handler) }
        accepted.update { $0.append(connection) }
    }

    /// Waits for the `index`-th accepted connection and its handler.
    func connection(_ index: Int = 0) async throws -> (Connection, RecordingHandler) {
        let connections = try await accepted.wait("accepted connection #\(index)") { $0.count > index }
        let handlers = try await handlers.wait("handler #\(index)") { $0.count > index }
        return (connections[index], handlers[index])
    }

    var endpoint: Endpoint {
        let address = listener.localAddress
        if address.isUnixDomain {
            return .unix(path: address.host)
        }
        return .tcp(host: address.host, port: address.port!)
    }
}

/// Connects to `endpoint` on `loop` and installs a fresh ``RecordingHandler``.
func connectAndStart(
    _ endpoint: Endpoint, on loop: EventLoop, options: ConnectionOptions = .init(),
    handler: RecordingHandler = RecordingHandler()
) async throws -> (Connection, RecordingHandler) {
    let connection = try await within(.seconds(10), "connect to \(endpoint)") {
        try await Connection.connect(to: endpoint, options: options, on: loop)
    }
    await onLoop(loop) {
        connection.start(handler: handler)
    }
    return (connection, handler)
}

/// True when an IPv6 socket can bind to ::1.
func ipv6LoopbackAvailable() -> Bool {
    let fd = socket(AF_INET6, Sys.streamType, 0)
    guard fd >= 0 else {
        return false
    }
    defer { close(fd) }
    guard let address = SocketAddress(ipAddress: "::1", port: 0) else {
        return false
    }
    return address.withSockAddr { bind(fd, $0, $1) } == 0
}

/// A raw blocking TCP socket on 127.0.0.1 bound to a free port, for tests that need a socket the transport
/// does not drive (refused ports, a listener that never accepts).
final class RawSocket: Sendable {
    let fd: Int32
    let port: Int

    init(listenBacklog: Int32?) throws {
        let fd = socket(AF_INET, Sys.streamType, 0)
        guard fd >= 0 else {
            throw SystemCallError(errno: errno, function: "socket")
        }
        let address = SocketAddress(ipAddress: "127.0.0.1", port: 0)!
        guard address.withSockAddr({ bind(fd, $0, $1) }) == 0 else {
            let code = errno
            close(fd)
            throw SystemCallError(errno: code, function: "bind")
        }
        if let listenBacklog {
            guard listen(fd, listenBacklog) == 0 else {
                let code = errno
                close(fd)
                throw SystemCallError(errno: code, function: "listen")
            }
        }
        self.fd = fd
        self.port = Sys.localAddress(fd)!.port!
    }

    func closeSocket() {
        close(fd)
    }
}

/// A fresh path for a Unix socket in the temporary directory.
func temporaryUnixPath(_ tag: String) -> String {
    "/tmp/longlink-test-\(getpid())-\(tag)-\(UInt32.random(in: 0...UInt32.max)).sock"
}

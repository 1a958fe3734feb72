import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Synchronization

/// What a test peer has seen.
struct PeerState: Sendable {
    var bytes: [UInt8] = []
    var byteCount = 0
    var reads = 0
    var closed = false
    var closeError: LongLinkError?
    /// Every writability change reported, in order.
    var writability: [Bool] = []
}

/// A connection handler that records what arrives and, optionally, echoes it back (with backpressure: it stops
/// reading while its connection is not writable).
final class TestPeer: ConnectionHandler, Sendable {
    let connection: Connection
    let state = Watched(PeerState())
    let echoes: Bool
    let keepsBytes: Bool

    init(connection: Connection, echoes: Bool, keepsBytes: Bool = true) {
        self.connection = connection
        self.echoes = echoes
        self.keepsBytes = keepsBytes
    }

    /// Connects to `endpoint` on `loop` and starts recording.
    static func connect(
        to endpoint: Endpoint, on loop: EventLoop = EventLoopGroup.shared.next(), keepsBytes: Bool = true
    ) async throws -> TestPeer {
        let connection = try await Connection.connect(to: endpoint, on: loop)
        let peer = TestPeer(connection: connection, echoes: false, keepsBytes: keepsBytes)
        await onLoop(loop) {
            connection.start(handler: peer)
        }
        return peer
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        state.update { state in
            if keepsBytes {
                state.bytes.append(contentsOf: bytes)
            }
            state.byteCount += bytes.count
            state.reads += 1
        }
        if echoes {
            connection.write { $0.append(contentsOf: bytes) }
            if !connection.isWritable {
                connection.pauseReading()
            }
        }
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        let writable = connection.isWritable
        state.update { $0.writability.append(writable) }
        if echoes && writable {
            connection.resumeReading()
        }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        state.update { state in
            state.closed = true
            state.closeError = error
        }
    }

    func send(_ bytes: [UInt8]) async throws {
        try await connection.send(bytes)
    }

    func send(_ text: String) async throws {
        try await connection.send(Array(text.utf8))
    }

    /// Waits until `count` bytes have arrived and returns all bytes received so far.
    @discardableResult
    func waitForBytes(_ count: Int, within limit: Duration = .seconds(10)) async throws -> [UInt8] {
        try await state.wait("\(count) bytes", within: limit) { $0.byteCount >= count }.bytes
    }

    /// Waits until the received bytes read as `text`.
    func waitForText(_ text: String, within limit: Duration = .seconds(20)) async throws {
        let expected = Array(text.utf8)
        try await state.wait("the text \"\(text)\"", within: limit) { $0.bytes == expected }
    }

    /// Waits for the close and returns its error (nil for a clean end of stream).
    @discardableResult
    func waitForClose(within limit: Duration = .seconds(20)) async throws -> LongLinkError? {
        try await state.wait("the connection to close", within: limit) { $0.closed }.closeError
    }

    func close() {
        connection.close(.immediately)
    }
}

/// A loopback TCP server (built on the transport) whose connections echo or just record.
final class EchoServer: Sendable {
    let listener: Listener
    let sessions: Watched<[TestPeer]>

    private init(listener: Listener, sessions: Watched<[TestPeer]>) {
        self.listener = listener
        self.sessions = sessions
    }

    static func start(echoes: Bool = true, keepsBytes: Bool = true) async throws -> EchoServer {
        let sessions = Watched<[TestPeer]>([])
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0)) { connection in
            let peer = TestPeer(connection: connection, echoes: echoes, keepsBytes: keepsBytes)
            connection.start(handler: peer)
            sessions.update { $0.append(peer) }
        }
        return EchoServer(listener: listener, sessions: sessions)
    }

    var endpoint: Endpoint {
        .tcp(host: listener.localAddress.host, port: listener.localAddress.port ?? 0)
    }

    /// Waits until `count` connections were accepted and returns the `count`th.
    func session(_ number: Int = 1, within limit: Duration = .seconds(20)) async throws -> TestPeer {
        try await sessions.wait("server connection \(number)", within: limit) { $0.count >= number }[number - 1]
    }

    func stop() {
        listener.close()
        for session in sessions.value {
            session.connection.close(.immediately)
        }
    }
}

func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var generator = SplitMix64(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    var index = 0
    while index < count {
        var word = generator.next()
        for _ in 0..<8 where index < count {
            bytes[index] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            index += 1
        }
    }
    return bytes
}

/// FNV-1a, 64-bit.
func checksum(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    return hash
}

import LongLinkCore
import LongLinkTransport
import LongLinkWire

/// A raw socket for flood tests: it sends bytes as given and counts what the server sends back
/// (bytes, and frames by kind), keeping no frame, so that tens of megabytes cost it nothing but
/// the decoding. Waits poll its counts, each bounded.
package final class FloodClient: ConnectionHandler, @unchecked Sendable {
    /// What arrived so far.
    package struct Received: Sendable {
        package var bytes = 0
        package var welcomes = 0
        package var responses = 0
        package var pushes = 0
        package var pongs = 0
        package var goAways = 0
        package var others = 0
        /// The server closed the connection (or it failed).
        package var closed = false
        /// When the last byte arrived.
        package var lastByteAt = ContinuousClock.now
    }

    package let connection: Connection
    private let received = Locked(Received())
    // Only touched on the connection's event loop.
    private var decoder = FrameDecoder()
    private var frames: [Frame] = []

    private init(connection: Connection) {
        self.connection = connection
    }

    /// Connects to the server on loopback `port`.
    package static func connect(port: Int) async throws -> FloodClient {
        let connection = try await Connection.connect(
            to: .tcp(host: "127.0.0.1", port: port), on: EventLoopGroup.shared.next())
        let client = FloodClient(connection: connection)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            connection.eventLoop.execute {
                connection.start(handler: client)
                continuation.resume()
            }
        }
        return client
    }

    /// What arrived so far.
    package var counts: Received { received.withLock { $0 } }

    package func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        // A server that sends what does not decode is counted in bytes all the same.
        try? decoder.decode(bytes, into: &frames)
        received.withLock { received in
            received.bytes += bytes.count
            received.lastByteAt = .now
            for frame in frames {
                switch frame {
                case .welcome: received.welcomes += 1
                case .response: received.responses += 1
                case .push: received.pushes += 1
                case .pong: received.pongs += 1
                case .goAway: received.goAways += 1
                default: received.others += 1
                }
            }
        }
        frames.removeAll(keepingCapacity: true)
    }

    package func connectionWritabilityChanged(_ connection: Connection) {}

    package func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        received.withLock { $0.closed = true }
    }

    /// Sends `frames`, encoded back to back, in writes of about `chunk` bytes. Returns the bytes
    /// sent.
    @discardableResult
    package func send(_ frames: [Frame], chunk: Int = 64 << 10) async throws -> Int {
        var bytes: [UInt8] = []
        var sent = 0
        for frame in frames {
            frame.encodeDelimited(into: &bytes)
            if bytes.count >= chunk {
                sent += bytes.count
                try await connection.send(bytes)
                bytes.removeAll(keepingCapacity: true)
            }
        }
        if !bytes.isEmpty {
            sent += bytes.count
            try await connection.send(bytes)
        }
        return sent
    }

    /// Sends `bytes` as they are; a server that closed the connection meanwhile is no failure.
    package func sendRaw(_ bytes: [UInt8]) async {
        try? await connection.send(bytes)
    }

    /// Waits until `condition` holds of what arrived, at most `timeout`.
    package func wait(
        _ what: String, within timeout: Duration = .seconds(20), until condition: (Received) -> Bool
    ) async throws {
        try await eventually(what, within: timeout) { condition(counts) }
    }

    /// Waits until nothing has arrived for `quiet` (or the connection closed), at most `timeout`:
    /// the end of what a flood made the server send, measured.
    package func waitForQuiet(_ quiet: Duration, within timeout: Duration = .seconds(30)) async throws {
        try await eventually("the server stops sending", within: timeout) {
            let counts = counts
            return counts.closed || ContinuousClock.now - counts.lastByteAt >= quiet
        }
    }

    /// Sends `Hello` and waits for `Welcome`.
    package func handshake(clientID: String) async throws {
        let welcomes = counts.welcomes
        try await send([.hello(Frame.Hello(clientID: clientID))])
        try await wait("Welcome") { $0.welcomes > welcomes || $0.closed }
    }

    /// Sends a request and waits for a response (any: the flood client keeps none).
    package func call(_ method: String, _ payload: String, id: String, within timeout: Duration = .seconds(60))
        async throws
    {
        let responses = counts.responses
        try await send([.request(Frame.Request(requestID: id, method: method, payload: Array(payload.utf8)))])
        try await wait("the response to \(id)", within: timeout) { $0.responses > responses || $0.closed }
    }

    package func close() {
        connection.close(.immediately)
    }
}

import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire

/// A client of raw frames for the fleet's ack tests: it logs in, syncs and sends whatever `Ack`s a
/// test makes up, which LongLink's client never would (repeats by the hundred thousand, acks of an
/// epoch that ended). Frames from the server arrive in ``frames``.
final class AckingClient: ConnectionHandler, @unchecked Sendable {
    let connection: Connection
    /// Every frame the server sent, in order (a decoding error ends the test as a timeout).
    let frames = Mailbox<Frame>()
    private var decoder = FrameDecoder()
    private var decoded: [Frame] = []

    private init(connection: Connection) {
        self.connection = connection
    }

    /// Connects to `endpoint`, says Hello, logs in as `principal` through the fleet's `login` and
    /// sends `Sync`.
    static func loggedIn(to endpoint: Endpoint, as principal: String) async throws -> AckingClient {
        let connection = try await Connection.connect(to: endpoint, on: EventLoopGroup.shared.next())
        let client = AckingClient(connection: connection)
        connection.eventLoop.execute { connection.start(handler: client) }
        try await client.send([.hello(Frame.Hello(clientID: "acker-\(principal)"))])
        guard case .welcome = try await client.frames.next(within: .seconds(10), "Welcome") else {
            throw ConditionTimedOut(what: "Welcome first")
        }
        let login = Frame.Request(requestID: "login", method: "login", payload: Array(principal.utf8))
        try await client.send([.request(login)])
        guard case .response(let response) = try await client.frames.next(within: .seconds(10), "the login"),
            response.status == nil || response.status?.code == .ok
        else { throw ConditionTimedOut(what: "the login's reply") }
        // A Sync counts only after the binding, which the fleet makes once the login ran.
        try await client.send([.sync(Frame.Sync())])
        return client
    }

    /// The next frame that is a reliable push, within 10 s (others are skipped).
    func nextPush() async throws -> Frame.Push {
        while true {
            if case .push(let push) = try await frames.next(within: .seconds(10), "a push"), push.seq > 0 {
                return push
            }
        }
    }

    /// Sends a `Ping` and waits for its `Pong`: the server answers after it handled every frame sent
    /// before, so the acks before it were all seen.
    func barrier(nonce: UInt64) async throws {
        try await send([.ping(Frame.Ping(nonce: nonce))])
        while true {
            if case .pong(let pong) = try await frames.next(within: .seconds(60), "the Pong"), pong.nonce == nonce {
                return
            }
        }
    }

    func send(_ batch: [Frame]) async throws {
        var bytes: [UInt8] = []
        for frame in batch { frame.encodeDelimited(into: &bytes) }
        try await connection.send(bytes)
    }

    func close() {
        connection.close(.immediately)
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard (try? decoder.decode(bytes, into: &decoded)) != nil else { return }
        for frame in decoded { frames.put(frame) }
        decoded.removeAll(keepingCapacity: true)
    }

    func connectionWritabilityChanged(_ connection: Connection) {}

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {}
}

import LongLinkTransport
import LongLinkWire
import Synchronization

/// A raw protocol client for the tool's tests: frames go out as given and every frame that comes
/// back is kept, so a test can wait for the one it expects (a response by id, a push by topic)
/// while others keep arriving.
final class WireClient: ConnectionHandler, @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private struct Inbox {
        var frames: [Frame] = []
        var closed = false
    }

    let connection: Connection
    // Only touched on the connection's event loop.
    private var decoder = FrameDecoder()
    private var decoded: [Frame] = []
    private let inbox = Mutex(Inbox())

    private init(connection: Connection) {
        self.connection = connection
    }

    static func connect(host: String, port: Int) async throws -> WireClient {
        let connection = try await Connection.connect(
            to: .tcp(host: host, port: port), on: EventLoopGroup.shared.next())
        let client = WireClient(connection: connection)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            connection.eventLoop.execute {
                connection.start(handler: client)
                continuation.resume()
            }
        }
        return client
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        do {
            try decoder.decode(bytes, into: &decoded)
        } catch {
            connection.close(.immediately)
        }
        let frames = decoded
        decoded.removeAll(keepingCapacity: true)
        inbox.withLock { $0.frames += frames }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        inbox.withLock { $0.closed = true }
    }

    func send(_ frame: Frame) async throws {
        var bytes: [UInt8] = []
        frame.encodeDelimited(into: &bytes)
        try await connection.send(bytes)
    }

    /// Removes and returns the first frame that `matches`, waiting for it at most `timeout`.
    func take(
        _ what: String, within timeout: Duration = .seconds(5), _ matches: (Frame) -> Bool
    ) async throws -> Frame {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let (found, closed) = inbox.withLock { inbox -> (Frame?, Bool) in
                guard let index = inbox.frames.firstIndex(where: matches) else { return (nil, inbox.closed) }
                return (inbox.frames.remove(at: index), inbox.closed)
            }
            if let found { return found }
            if closed { throw Failure(description: "the connection closed before \(what) arrived") }
            guard ContinuousClock.now < deadline else { throw Failure(description: "timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func handshake(clientID: String) async throws -> Frame.Welcome {
        try await send(.hello(Frame.Hello(clientID: clientID)))
        let frame = try await take("Welcome") { if case .welcome = $0 { true } else { false } }
        guard case .welcome(let welcome) = frame else { throw Failure(description: "not a Welcome: \(frame)") }
        return welcome
    }

    /// Sends a request and waits for the response with the same id.
    func call(_ method: String, _ payload: String, id: String) async throws -> Frame.Response {
        try await send(.request(Frame.Request(requestID: id, method: method, payload: Array(payload.utf8))))
        let frame = try await take("the response to \(id)") {
            if case .response(let response) = $0 { response.requestID == id } else { false }
        }
        guard case .response(let response) = frame else { throw Failure(description: "not a Response: \(frame)") }
        return response
    }

    /// Waits for a push on `topic`.
    func push(topic: String, within timeout: Duration = .seconds(5)) async throws -> Frame.Push {
        let frame = try await take("a push on \(topic)", within: timeout) {
            if case .push(let push) = $0 { push.topic == topic } else { false }
        }
        guard case .push(let push) = frame else { throw Failure(description: "not a Push: \(frame)") }
        return push
    }

    func close() {
        connection.close(.immediately)
    }
}

extension Frame.Response {
    var text: String { String(decoding: payload, as: UTF8.self) }
}

extension Frame.Push {
    var text: String { String(decoding: payload, as: UTF8.self) }
}

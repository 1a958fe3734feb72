import LongLinkCore
import LongLinkTransport
import LongLinkWire

/// A raw protocol client for server and tool tests: it sends frames as given and hands back every
/// frame the server sends, with no LongLink client logic in between. `next()` and its kin read the
/// frames in order; `take(_:within:_:)` and its kin wait for the one they match while others keep
/// arriving, keeping those for later takes.
package final class FrameClient: ConnectionHandler, @unchecked Sendable {
    package enum Event: Sendable {
        case frame(Frame)
        case closed(LongLinkError?)
    }

    package struct UnexpectedEvent: Error, CustomStringConvertible {
        package let event: Event
        package let expected: String
        package var description: String { "expected \(expected), got \(event)" }

        package init(event: Event, expected: String) {
            self.event = event
            self.expected = expected
        }
    }

    package let connection: Connection
    package let events = Mailbox<Event>()
    // Only touched on the connection's event loop.
    private var decoder = FrameDecoder()
    private var frames: [Frame] = []
    /// Frames read by a take that did not match it.
    private let held = Locked<[Frame]>([])

    private init(connection: Connection) {
        self.connection = connection
    }

    package static func connect(to address: SocketAddress, readingPaused: Bool = false) async throws -> FrameClient {
        try await connect(host: address.host, port: address.port ?? 0, readingPaused: readingPaused)
    }

    package static func connect(host: String, port: Int, readingPaused: Bool = false) async throws -> FrameClient {
        let connection = try await Connection.connect(
            to: .tcp(host: host, port: port), on: EventLoopGroup.shared.next())
        let client = FrameClient(connection: connection)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            connection.eventLoop.execute {
                connection.start(handler: client)
                if readingPaused { connection.pauseReading() }
                continuation.resume()
            }
        }
        return client
    }

    package func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            events.put(.closed(LongLinkError(code: .protocolViolation, message: "\(error)")))
        }
        for frame in frames { events.put(.frame(frame)) }
        frames.removeAll(keepingCapacity: true)
    }

    package func connectionWritabilityChanged(_ connection: Connection) {}

    package func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        events.put(.closed(error))
    }

    package func send(_ frames: Frame...) async throws {
        var bytes: [UInt8] = []
        for frame in frames { frame.encodeDelimited(into: &bytes) }
        try await connection.send(bytes)
    }

    package func sendRaw(_ bytes: [UInt8]) async throws {
        try await connection.send(bytes)
    }

    package func next(within timeout: Duration = .seconds(20)) async throws -> Event {
        try await events.next(within: timeout, "a frame from the server")
    }

    package func nextFrame(within timeout: Duration = .seconds(20)) async throws -> Frame {
        let event = try await next(within: timeout)
        guard case .frame(let frame) = event else { throw UnexpectedEvent(event: event, expected: "a frame") }
        return frame
    }

    /// Waits for the server to close the connection, skipping frames; returns them.
    @discardableResult
    package func framesUntilClosed(within timeout: Duration = .seconds(20)) async throws -> [Frame] {
        var seen: [Frame] = []
        while true {
            switch try await next(within: timeout) {
            case .frame(let frame): seen.append(frame)
            case .closed: return seen
            }
        }
    }

    package func handshake(
        clientID: String = "test-client", heartbeatMilliseconds: UInt32 = 0
    ) async throws -> Frame.Welcome {
        try await send(.hello(Frame.Hello(clientID: clientID, heartbeatMilliseconds: heartbeatMilliseconds)))
        let frame = try await nextFrame()
        guard case .welcome(let welcome) = frame else {
            throw UnexpectedEvent(event: .frame(frame), expected: "Welcome")
        }
        return welcome
    }

    /// Sends a request and waits for its response, failing on anything else.
    package func call(_ method: String, _ payload: [UInt8] = [], id: String, timeoutMilliseconds: UInt32 = 0)
        async throws
        -> Frame.Response
    {
        try await send(
            .request(
                Frame.Request(requestID: id, method: method, payload: payload, timeoutMilliseconds: timeoutMilliseconds)
            ))
        return try await response()
    }

    package func response(within timeout: Duration = .seconds(20)) async throws -> Frame.Response {
        let frame = try await nextFrame(within: timeout)
        guard case .response(let response) = frame else {
            throw UnexpectedEvent(event: .frame(frame), expected: "Response")
        }
        return response
    }

    /// Removes and returns the first frame that `matches`, among those held and those still to
    /// come, waiting for it at most `timeout`; throws if the connection closes first.
    package func take(
        _ what: String, within timeout: Duration = .seconds(5), _ matches: (Frame) -> Bool
    ) async throws -> Frame {
        let found = held.withLock { held -> Frame? in
            guard let index = held.firstIndex(where: matches) else { return nil }
            return held.remove(at: index)
        }
        if let found { return found }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let event = try await events.next(within: max(.zero, deadline - ContinuousClock.now), what)
            guard case .frame(let frame) = event else { throw UnexpectedEvent(event: event, expected: what) }
            if matches(frame) { return frame }
            held.withLock { $0.append(frame) }
        }
    }

    /// Sends a request and waits for the response with the same id, keeping other frames (pushes)
    /// for later takes.
    package func call(_ method: String, _ payload: String, id: String) async throws -> Frame.Response {
        try await send(.request(Frame.Request(requestID: id, method: method, payload: Array(payload.utf8))))
        let frame = try await take("the response to \(id)") {
            if case .response(let response) = $0 { response.requestID == id } else { false }
        }
        guard case .response(let response) = frame else { throw UnexpectedEvent(event: .frame(frame), expected: id) }
        return response
    }

    /// Waits for a push on `topic`, keeping other frames for later takes.
    package func push(topic: String, within timeout: Duration = .seconds(5)) async throws -> Frame.Push {
        let frame = try await take("a push on \(topic)", within: timeout) {
            if case .push(let push) = $0 { push.topic == topic } else { false }
        }
        guard case .push(let push) = frame else { throw UnexpectedEvent(event: .frame(frame), expected: topic) }
        return push
    }

    /// The frames received and kept by ``take(_:within:_:)`` for later, in arrival order.
    package func heldFrames() -> [Frame] {
        held.withLock { $0 }
    }

    package func close() {
        connection.close(.immediately)
    }
}

/// Runs `body` on `loop` and returns its result.
package func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        loop.execute {
            continuation.resume(returning: body())
        }
    }
}

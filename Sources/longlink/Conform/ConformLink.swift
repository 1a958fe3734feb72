import LongLinkCLISupport
import LongLinkWire

/// One connection of a rule, with the steps rules are made of: handshake, call, expect a `GoAway`
/// and the close, listen for a while. Every wait is bounded by the run's step timeout; frames read
/// while waiting for another one are kept for later steps, as a client would (a `Pong` may come
/// between two responses).
final class ConformLink {
    let socket: ConformSocket
    let timeout: Duration
    /// Frames read but not yet taken by a step.
    private var held: [Frame] = []

    init(socket: ConformSocket, timeout: Duration) {
        self.socket = socket
        self.timeout = timeout
    }

    /// A deadline one step from now.
    var stepDeadline: ContinuousClock.Instant { .now + timeout }

    /// Writes `frames` in one write.
    func send(_ frames: Frame...) throws(ConformFailure) {
        try socket.send(frames, until: stepDeadline)
    }

    /// Writes `bytes` as they are.
    func sendRaw(_ bytes: [UInt8]) throws(ConformFailure) {
        try socket.send(bytes, until: stepDeadline)
    }

    /// The first frame that `matches`, held or new, waiting at most until `deadline` (one step by
    /// default). Fails, naming `what` and what came instead, on a close, a timeout or bad bytes.
    func take(
        _ what: String, until deadline: ContinuousClock.Instant? = nil, _ matches: (Frame) -> Bool
    ) throws(ConformFailure) -> Frame {
        if let index = held.firstIndex(where: matches) { return held.remove(at: index) }
        let deadline = deadline ?? stepDeadline
        while true {
            switch socket.next(until: deadline) {
            case .frame(let frame):
                if matches(frame) { return frame }
                held.append(frame)
            case .closed(let how):
                throw ConformFailure("expected \(what), but the connection \(how)\(heldText)")
            case .timedOut:
                throw ConformFailure("expected \(what), got nothing within \(DurationText.format(timeout))\(heldText)")
            case .malformed(let problem):
                throw ConformFailure("expected \(what), but the server sent a malformed frame: \(problem)")
            }
        }
    }

    /// Sends `Hello` and returns the `Welcome`; fails on anything else.
    func handshake(clientID: String, version: UInt32 = Frame.protocolVersion) throws(ConformFailure)
        -> Frame.Welcome
    {
        try send(.hello(Frame.Hello(version: version, clientID: clientID)))
        return try welcome()
    }

    /// Waits for the server's first frame and requires it to be `Welcome`.
    func welcome() throws(ConformFailure) -> Frame.Welcome {
        let frame = try take("Welcome") { _ in true }
        guard case .welcome(let welcome) = frame else {
            throw ConformFailure("expected Welcome, got \(Self.text(frame))")
        }
        return welcome
    }

    /// Sends a request and returns its `Response`.
    func call(
        _ method: String, _ payload: [UInt8] = [], id: String, timeoutMilliseconds: UInt32 = 0, resent: Bool = false
    ) throws(ConformFailure) -> Frame.Response {
        var request = Frame.Request(
            requestID: id, method: method, payload: payload, timeoutMilliseconds: timeoutMilliseconds)
        request.resent = resent
        try send(.request(request))
        return try response(to: id)
    }

    /// The `Response` to `id`.
    func response(to id: String, until deadline: ContinuousClock.Instant? = nil) throws(ConformFailure)
        -> Frame.Response
    {
        let frame = try take("the Response to request \(id)", until: deadline) { frame in
            if case .response(let response) = frame { return response.requestID == id }
            return false
        }
        guard case .response(let response) = frame else { preconditionFailure("take returned another frame") }
        return response
    }

    /// Calls a method of the conformance contract and requires it to succeed: skips the rule when
    /// the server answers `UNIMPLEMENTED`, fails it on any other error.
    func require(_ method: String, _ payload: [UInt8] = [], id: String) throws(ConformFailure) -> [UInt8] {
        let response = try call(method, payload, id: id)
        let code = response.status?.code ?? .ok
        if code == .unimplemented {
            throw .skip(
                "the server has no '\(method)' method (answered UNIMPLEMENTED); see Protocol.md, longlink conform")
        }
        guard code == .ok else {
            throw ConformFailure(
                "'\(method)' failed: \(code) \(response.status?.message ?? "") (see the conformance contract)")
        }
        return response.payload
    }

    /// Logs in as `user` with the contract's `login` method.
    func login(_ user: String, id: String) throws(ConformFailure) {
        _ = try require("login", Array(user.utf8), id: id)
    }

    /// Waits for a `GoAway` with `code` (and `reconnect`, when given), then for the server to close
    /// the connection. Fails on a `Welcome` or `Response` meanwhile, another code, or no close.
    func expectGoAway(_ code: StatusCode, reconnect: Bool? = nil) throws(ConformFailure) {
        let frame = try take("GoAway{\(code)}") { frame in
            switch frame {
            case .goAway, .welcome: true
            default: false
            }
        }
        guard case .goAway(let goAway) = frame else {
            throw ConformFailure("expected GoAway{\(code)}, got \(Self.text(frame))")
        }
        guard goAway.code == code else {
            throw ConformFailure("expected GoAway{\(code)}, got \(Self.text(frame))")
        }
        if let reconnect, goAway.reconnect != reconnect {
            throw ConformFailure("expected GoAway{\(code), reconnect: \(reconnect)}, got \(Self.text(frame))")
        }
        try expectClose(after: "GoAway")
    }

    /// Waits for the server to close the connection, ignoring frames meanwhile.
    func expectClose(after what: String) throws(ConformFailure) {
        let deadline = stepDeadline
        while true {
            switch socket.next(until: deadline) {
            case .frame: continue
            case .closed, .malformed: return
            case .timedOut:
                throw ConformFailure("the connection stayed open \(DurationText.format(timeout)) after \(what)")
            }
        }
    }

    /// Every frame that arrives within `duration` (and those held), for rules that check that
    /// something does not come. Stops early when the connection closes.
    func frames(during duration: Duration) -> [Frame] {
        var seen = held
        held.removeAll()
        let deadline = ContinuousClock.now + duration
        while true {
            switch socket.next(until: deadline) {
            case .frame(let frame): seen.append(frame)
            case .closed, .timedOut, .malformed: return seen
            }
        }
    }

    /// Sends a `Ping` and waits for its `Pong`: proof that the server handled what came before
    /// and that the connection is still open.
    func roundTrip(nonce: UInt64) throws(ConformFailure) {
        try send(.ping(Frame.Ping(nonce: nonce)))
        let frame = try take("Pong{nonce: \(nonce)}") { frame in
            if case .pong(let pong) = frame { return pong.nonce == nonce }
            if case .goAway = frame { return true }
            return false
        }
        if case .goAway = frame { throw ConformFailure("expected Pong{nonce: \(nonce)}, got \(Self.text(frame))") }
    }

    private var heldText: String {
        held.isEmpty ? "" : " (got \(held.prefix(3).map(Self.text).joined(separator: ", ")))"
    }

    /// A frame as short canonical JSON, for messages.
    static func text(_ frame: Frame) -> String {
        if case .unrecognized = frame { return "an empty or unknown frame" }
        let json = FrameJSON.message(frame)
        return json.count > 160 ? String(json.prefix(157)) + "..." : json
    }
}

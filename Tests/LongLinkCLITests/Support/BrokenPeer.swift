import LongLinkTransport
import LongLinkWire

/// A tiny raw protocol server for `longlink conform`'s tests that breaks one rule on purpose, or
/// none, as the control. Behaving, it keeps the handshake's rules (`Welcome` for a good `Hello`,
/// `GoAway` and a close for a first frame other than `Hello`, an empty `client_id`, another version
/// or a second `Hello`), refuses malformed frames and empty request ids the same way, ignores empty
/// and unknown frames, answers `Ping` with `Pong`, an `echo` request with its payload, a `sleep`
/// request after its milliseconds (stopped by `Cancel` and by `timeout_ms`), and any other request
/// with `UNIMPLEMENTED`; after the client's `GoAway` it closes once its sleeps are answered. It has
/// no de-duplication window, logins or pushes.
final class BrokenPeer: Sendable {
    /// The one rule it breaks.
    enum Fault: Sendable, CustomStringConvertible {
        /// Never answers a `Ping`.
        case silentPing
        /// Answers a `Ping` with a `Pong` whose nonce is one more than the ping's.
        case wrongNonce
        /// Welcomes a `Hello` of any version.
        case acceptsAnyVersion
        /// Checks nothing in the handshake: any first frame, any client id, a second `Hello`.
        case lenientHandshake
        /// Refuses empty and unknown frames with `GoAway{INVALID_ARGUMENT}`.
        case refusesUnknownFrames
        /// Sends its `GoAway`s but never closes.
        case staysOpenAfterGoAway
        /// Answers each `echo` request twice.
        case answersTwice
        /// Answers requests with another request id.
        case wrongResponseID
        /// Has no methods at all: every request is `UNIMPLEMENTED`.
        case noMethods
        /// Answers a cancelled `sleep` anyway.
        case ignoresCancel
        /// Lets a `sleep` run past its `timeout_ms`.
        case ignoresTimeout
        /// Closes at once on the client's `GoAway`, dropping the sleeps in flight.
        case dropsInFlightOnGoAway

        var description: String {
            switch self {
            case .silentPing: "never answers Ping"
            case .wrongNonce: "answers Ping with the wrong nonce"
            case .acceptsAnyVersion: "welcomes version 2"
            case .lenientHandshake: "checks nothing in the handshake"
            case .refusesUnknownFrames: "refuses empty and unknown frames"
            case .staysOpenAfterGoAway: "stays open after its GoAway"
            case .answersTwice: "answers each request twice"
            case .wrongResponseID: "answers with another request id"
            case .noMethods: "has no methods"
            case .ignoresCancel: "ignores Cancel"
            case .ignoresTimeout: "ignores timeout_ms"
            case .dropsInFlightOnGoAway: "drops requests in flight on the client's GoAway"
            }
        }
    }

    private let listener: Listener

    /// The port it listens on (127.0.0.1).
    var port: Int { listener.localAddress.port ?? 0 }

    private init(listener: Listener) {
        self.listener = listener
    }

    /// Starts listening on a port of the system's choice; `fault` nil behaves.
    static func start(_ fault: Fault?) async throws -> BrokenPeer {
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0)) { connection in
            connection.start(handler: BrokenPeerSession(fault: fault))
        }
        return BrokenPeer(listener: listener)
    }

    func close() async {
        await listener.closeAndWait()
    }
}

/// One connection of a ``BrokenPeer``; only touched on its connection's event loop.
private final class BrokenPeerSession: ConnectionHandler {
    private let fault: BrokenPeer.Fault?
    private var decoder = FrameDecoder()
    private var frames: [Frame] = []
    private var welcomed = false
    /// Set once a `GoAway` is sent: nothing more is read.
    private var done = false
    /// The sleeps running, by request id.
    private var sleeps: [String: EventLoopTimer] = [:]
    /// Set by the client's `GoAway`: close once the sleeps are answered.
    private var draining = false

    init(fault: BrokenPeer.Fault?) {
        self.fault = fault
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !done else { return }
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            let code: StatusCode
            if case .frameTooLarge = error.kind { code = .resourceExhausted } else { code = .invalidArgument }
            goAway(code, "\(error)", on: connection)
        }
        let received = frames
        frames.removeAll(keepingCapacity: true)
        for frame in received where !done { answer(frame, on: connection) }
        connection.flush()
    }

    private func answer(_ frame: Frame, on connection: Connection) {
        let lenient = fault == .lenientHandshake
        switch frame {
        case .unrecognized:
            if fault == .refusesUnknownFrames { goAway(.invalidArgument, "unknown frame", on: connection) }
        case .hello(let hello):
            if welcomed, !lenient { return goAway(.invalidArgument, "second Hello", on: connection) }
            if hello.version != Frame.protocolVersion, fault != .acceptsAnyVersion {
                return goAway(.failedPrecondition, "version", reconnect: false, on: connection)
            }
            if hello.clientID.isEmpty, !lenient { return goAway(.invalidArgument, "client_id", on: connection) }
            welcomed = true
            send(.welcome(Frame.Welcome(serverID: "broken", heartbeatMilliseconds: 15_000)), on: connection)
        case _ where !welcomed && !lenient:
            goAway(.invalidArgument, "Hello first", on: connection)
        case .request(let request):
            guard !request.requestID.isEmpty else { return goAway(.invalidArgument, "request_id", on: connection) }
            let id = fault == .wrongResponseID ? request.requestID + "x" : request.requestID
            if request.method == "sleep", fault != .noMethods {
                return sleep(request, on: connection)
            }
            guard request.method == "echo", fault != .noMethods else {
                let status = Frame.Status(code: .unimplemented, message: "no method \(request.method)")
                return send(.response(Frame.Response(requestID: id, status: status)), on: connection)
            }
            let response = Frame.response(Frame.Response(requestID: id, payload: request.payload))
            send(response, on: connection)
            if fault == .answersTwice { send(response, on: connection) }
        case .cancel(let cancel):
            guard fault != .ignoresCancel, let timer = sleeps.removeValue(forKey: cancel.requestID) else { return }
            connection.eventLoop.cancelTimer(timer)
            closeIfDrained(connection)
        case .goAway:
            if fault == .dropsInFlightOnGoAway { return connection.close(.immediately) }
            draining = true
            closeIfDrained(connection)
        case .ping(let ping):
            switch fault {
            case .silentPing: break
            case .wrongNonce: send(.pong(Frame.Pong(nonce: ping.nonce &+ 1)), on: connection)
            default: send(.pong(Frame.Pong(nonce: ping.nonce)), on: connection)
            }
        default:
            break
        }
    }

    /// Answers `slept` after the payload's milliseconds, or `DEADLINE_EXCEEDED` when the request's
    /// `timeout_ms` comes first.
    private func sleep(_ request: Frame.Request, on connection: Connection) {
        let milliseconds = Int(String(decoding: request.payload, as: UTF8.self)) ?? 0
        let timeout = fault == .ignoresTimeout ? 0 : Int(request.timeoutMilliseconds)
        let timedOut = timeout > 0 && timeout < milliseconds
        let id = request.requestID
        let bound = LoopBound(session: self, connection: connection)
        sleeps[id] = connection.eventLoop.scheduleTimer(after: .milliseconds(timedOut ? timeout : milliseconds)) {
            bound.session.finishSleep(id, timedOut: timedOut, on: bound.connection)
        }
    }

    /// Runs on the connection's event loop, as the timer does.
    fileprivate func finishSleep(_ id: String, timedOut: Bool, on connection: Connection) {
        guard sleeps.removeValue(forKey: id) != nil else { return }
        let response =
            timedOut
            ? Frame.Response(requestID: id, status: Frame.Status(code: .deadlineExceeded, message: "timeout_ms"))
            : Frame.Response(requestID: id, payload: Array("slept".utf8))
        send(.response(response), on: connection)
        connection.flush()
        closeIfDrained(connection)
    }

    private func closeIfDrained(_ connection: Connection) {
        if draining, sleeps.isEmpty { connection.close(.graceful) }
    }

    private func goAway(_ code: StatusCode, _ reason: String, reconnect: Bool = true, on connection: Connection) {
        send(.goAway(Frame.GoAway(code: code, reason: reason, reconnect: reconnect)), on: connection)
        done = true
        connection.flush()
        if fault != .staysOpenAfterGoAway { connection.close(.graceful) }
    }

    private func send(_ frame: Frame, on connection: Connection) {
        var bytes: [UInt8] = []
        frame.encodeDelimited(into: &bytes)
        connection.write(bytes)
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        for timer in sleeps.values { connection.eventLoop.cancelTimer(timer) }
        sleeps.removeAll()
    }
}

/// Carries a session into its event-loop timers: they run on the loop the session lives on, so
/// nothing is shared across threads.
private struct LoopBound: @unchecked Sendable {
    let session: BrokenPeerSession
    let connection: Connection
}

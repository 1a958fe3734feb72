import Foundation
import LongLinkTransport
import LongLinkWire

/// One connection of a ``BrokenPeer``; only touched on its connection's event loop.
final class BrokenPeerSession: ConnectionHandler {
    private let fault: BrokenPeer.Fault?
    private let state: BrokenPeerState
    private var clientID = ""
    /// The user the connection logged in as.
    private var principal: String?
    /// Whether the connection sent `Sync` since its login.
    private var synced = false
    private var decoder: FrameDecoder
    private var frames: [Frame] = []
    private var welcomed = false
    /// Set once a `GoAway` is sent: nothing more is read.
    private var done = false
    /// The sleeps running, by request id.
    private var sleeps: [String: EventLoopTimer] = [:]
    /// Set by the client's `GoAway`: close once the sleeps are answered.
    private var draining = false

    init(fault: BrokenPeer.Fault?, state: BrokenPeerState) {
        self.fault = fault
        self.state = state
        decoder = FrameDecoder(
            maxFrameBytes: fault == .acceptsHugeFrames ? Int(UInt32.max) : Frame.defaultMaxFrameBytes)
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !done else { return }
        do {
            if fault == .refusesUnknownFields {
                try decodeRefusingUnknownFields(bytes)
            } else {
                try decoder.decode(bytes, into: &frames)
            }
        } catch {
            if fault == .closesWithoutGoAway {
                done = true
                return connection.close(.immediately)
            }
            let code: StatusCode
            if case .frameTooLarge = error.kind { code = .resourceExhausted } else { code = .invalidArgument }
            goAway(code, "\(error)", on: connection)
        }
        let received = frames
        frames.removeAll(keepingCapacity: true)
        for frame in received where !done { answer(frame, on: connection) }
        connection.flush()
    }

    /// Decodes frame by frame, and refuses one whose bytes outnumber its re-encoding's: it held
    /// fields the decoder skipped.
    private func decodeRefusingUnknownFields(_ bytes: UnsafeRawBufferPointer) throws(WireFormatError) {
        decoder.append(bytes)
        while true {
            let start = decoder.consumedByteCount
            guard let frame = try decoder.next() else { return }
            var encoded: [UInt8] = []
            frame.encodeDelimited(into: &encoded)
            guard encoded.count == decoder.consumedByteCount - start else {
                throw WireFormatError(.invalidFieldNumber(0), field: "unknown", offset: start)
            }
            frames.append(frame)
        }
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
            clientID = hello.clientID
            let welcome = Frame.Welcome(
                serverID: fault == .emptyServerID ? "" : "broken", heartbeatMilliseconds: 15_000,
                dedupeWindowMilliseconds: 60_000)
            send(.welcome(welcome), on: connection)
        case _ where !welcomed && !lenient:
            goAway(.invalidArgument, "Hello first", on: connection)
        case .request(let request):
            guard !request.requestID.isEmpty || fault == .answersEmptyRequestID else {
                return goAway(.invalidArgument, "request_id", on: connection)
            }
            if request.method == "sleep", fault != .noMethods { return sleep(request, on: connection) }
            var response: Frame.Response
            if let principal, fault != .runsResendsAgain,
                let entry = state.entry(principal, clientID, request.requestID)
            {
                response =
                    entry.method == request.method
                    ? entry.response : Frame.Response(status: Frame.Status(code: .invalidArgument, message: "method"))
            } else {
                let boundBefore = principal
                response = run(request, on: connection)
                if let boundBefore { state.remember(boundBefore, clientID, request, response) }
            }
            response.requestID = fault == .wrongResponseID ? request.requestID + "x" : request.requestID
            send(.response(response), on: connection)
            if fault == .answersTwice { send(.response(response), on: connection) }
        case .sync:
            guard let principal else { return }
            synced = true
            for push in state.unacknowledged(principal) { send(.push(push), on: connection) }
        case .ack(let ack):
            if let principal, fault != .ignoresAcks { state.acknowledge(ack.seqs, of: principal) }
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
            case .ignoresHeartbeatProposal: send(.pong(Frame.Pong(nonce: ping.nonce)), on: connection)
            default:
                // A proposal clamped to 50 ms ... 300 s, as LongLink's server does by default.
                let answer = ping.heartbeatMilliseconds == 0 ? 0 : min(max(ping.heartbeatMilliseconds, 50), 300_000)
                send(.pong(Frame.Pong(nonce: ping.nonce, loadPermille: 0, heartbeatMilliseconds: answer)), on: connection)
            }
        default:
            break
        }
    }

    /// Runs a method of the contract other than `sleep`.
    private func run(_ request: Frame.Request, on connection: Connection) -> Frame.Response {
        switch request.method {
        case _ where fault == .noMethods:
            break
        case "echo":
            return Frame.Response(payload: request.payload)
        case "login":
            principal = String(decoding: request.payload, as: UTF8.self)
            synced = false
            return Frame.Response(payload: Array("ok".utf8))
        case "count":
            return Frame.Response(payload: Array("runs \(state.run(clientID, request.requestID))".utf8))
        case "emit":
            guard let principal else {
                return Frame.Response(status: Frame.Status(code: .unauthenticated, message: "log in first"))
            }
            let object = (try? JSONSerialization.jsonObject(with: Data(request.payload))) as? [String: Any]
            let topic = object?["topic"] as? String ?? "t"
            let count = object?["n"] as? Int ?? 1
            let pushes = state.store(count, on: topic, for: principal, epoch: fault == .epochZero ? 0 : 7)
            if synced || fault == .pushesBeforeSync {
                for push in pushes { send(.push(push), on: connection) }
            }
            return Frame.Response(payload: Array("emitted".utf8))
        default:
            break
        }
        return Frame.Response(status: Frame.Status(code: .unimplemented, message: "no method \(request.method)"))
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

import LongLinkTransport
import LongLinkWire
import Synchronization

/// A tiny raw protocol server for `longlink conform`'s tests that breaks one rule on purpose (or
/// none, as the control): it answers `Hello` with `Welcome` (refusing versions other than 1 with
/// `GoAway{FAILED_PRECONDITION}`), `Ping` with `Pong`, an `echo` request with its payload and any
/// other request with `UNIMPLEMENTED`. It has no de-duplication, logins or pushes.
final class BrokenPeer: Sendable {
    /// The one rule it breaks.
    enum Fault: Sendable, CustomStringConvertible {
        /// Never answers a `Ping`.
        case silentPing
        /// Answers a `Ping` with a `Pong` whose nonce is one more than the ping's.
        case wrongNonce
        /// Welcomes a `Hello` of any version.
        case acceptsAnyVersion
        /// Answers each `echo` request twice.
        case answersTwice
        /// Has no methods at all: every request is `UNIMPLEMENTED`.
        case noMethods

        var description: String {
            switch self {
            case .silentPing: "never answers Ping"
            case .wrongNonce: "answers Ping with the wrong nonce"
            case .acceptsAnyVersion: "welcomes version 2"
            case .answersTwice: "answers each request twice"
            case .noMethods: "has no methods"
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

    init(fault: BrokenPeer.Fault?) {
        self.fault = fault
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            send(.goAway(Frame.GoAway(code: .invalidArgument, reason: "\(error)", reconnect: true)), on: connection)
            connection.close(.graceful)
            return
        }
        let received = frames
        frames.removeAll(keepingCapacity: true)
        for frame in received { answer(frame, on: connection) }
        connection.flush()
    }

    private func answer(_ frame: Frame, on connection: Connection) {
        switch frame {
        case .hello(let hello):
            if hello.version != Frame.protocolVersion, fault != .acceptsAnyVersion {
                send(.goAway(Frame.GoAway(code: .failedPrecondition, reason: "version")), on: connection)
                connection.close(.graceful)
                return
            }
            send(.welcome(Frame.Welcome(serverID: "broken", heartbeatMilliseconds: 15_000)), on: connection)
        case .request(let request):
            guard request.method == "echo", fault != .noMethods else {
                let status = Frame.Status(code: .unimplemented, message: "no method \(request.method)")
                send(.response(Frame.Response(requestID: request.requestID, status: status)), on: connection)
                return
            }
            let response = Frame.response(Frame.Response(requestID: request.requestID, payload: request.payload))
            send(response, on: connection)
            if fault == .answersTwice { send(response, on: connection) }
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

    private func send(_ frame: Frame, on connection: Connection) {
        var bytes: [UInt8] = []
        frame.encodeDelimited(into: &bytes)
        connection.write(bytes)
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {}
}

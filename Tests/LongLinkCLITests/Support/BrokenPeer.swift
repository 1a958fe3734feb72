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
        /// Announces a de-dup window but runs every copy again.
        case runsResendsAgain
        /// Sends reliable pushes before `Sync`.
        case pushesBeforeSync
        /// Numbers reliable pushes in epoch 0.
        case epochZero
        /// Ignores `Ack`: acknowledged pushes come again.
        case ignoresAcks
        /// Welcomes with an empty `server_id`.
        case emptyServerID
        /// Reads frames of any size.
        case acceptsHugeFrames
        /// Closes on malformed input without a `GoAway`.
        case closesWithoutGoAway
        /// Answers a request with an empty `request_id`.
        case answersEmptyRequestID
        /// Refuses a frame with fields it does not know (a frame longer than its re-encoding).
        case refusesUnknownFields
        /// Answers a `Ping` proposing an interval as an older server does: a `Pong` without one.
        case ignoresHeartbeatProposal

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
            case .runsResendsAgain: "runs resent requests again"
            case .pushesBeforeSync: "pushes before Sync"
            case .epochZero: "numbers pushes in epoch 0"
            case .ignoresAcks: "ignores Ack"
            case .emptyServerID: "has an empty server_id"
            case .acceptsHugeFrames: "reads frames of any size"
            case .closesWithoutGoAway: "closes on malformed input without GoAway"
            case .answersEmptyRequestID: "answers an empty request_id"
            case .refusesUnknownFields: "refuses unknown fields"
            case .ignoresHeartbeatProposal: "ignores a proposed heartbeat interval"
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
        let state = BrokenPeerState()
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0)) { connection in
            connection.start(handler: BrokenPeerSession(fault: fault, state: state))
        }
        return BrokenPeer(listener: listener)
    }

    func close() async {
        await listener.closeAndWait()
    }
}

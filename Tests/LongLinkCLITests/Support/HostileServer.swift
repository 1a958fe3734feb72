import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

/// A raw protocol server that breaks the protocol on its first connection and behaves on every
/// later one, to see what `longlink request` and `longlink subscribe` say when they recover.
///
/// Behaving means: `Welcome` (with a de-duplication window) for `Hello`, an echo `Response` for
/// each `Request`, `Pong` for `Ping`, and one best-effort push on topic `ticks` (payload `tick`)
/// after each `Sync`. After its offence a connection answers nothing more.
final class HostileServer: Sendable {
    /// What the first connection does wrong, and when.
    enum Offence: Sendable, CustomTestStringConvertible {
        /// Answers `Hello` with these bytes instead of a `Welcome`.
        case answerHello([UInt8])
        /// Sends a proper `Welcome`, then these bytes once the client sends `Sync` (logged in).
        case afterSync([UInt8])

        var bytes: [UInt8] {
            switch self {
            case .answerHello(let bytes), .afterSync(let bytes): bytes
            }
        }

        var testDescription: String {
            switch self {
            case .answerHello(let bytes): "answers Hello with \(bytes.count) bad bytes"
            case .afterSync(let bytes): "sends \(bytes.count) bad bytes after Sync"
            }
        }
    }

    /// A 2-byte frame whose first tag has wire type 7, which protobuf does not define.
    static let garbage: [UInt8] = [0x02, 0x0F, 0x00]
    /// A length prefix of 2 GiB (2^31 as a varint), far above any frame limit; no body follows.
    static let twoGiBPrefix: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x08]

    /// A counter the accept callback shares with the server.
    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    private let listener: Listener
    private let counter: Counter

    /// The port it listens on (127.0.0.1).
    var port: Int { listener.localAddress.port ?? 0 }
    /// Connections accepted so far.
    var connections: Int { counter.value.load(ordering: .relaxed) }

    private init(listener: Listener, counter: Counter) {
        self.listener = listener
        self.counter = counter
    }

    static func start(_ offence: Offence) async throws -> HostileServer {
        let counter = Counter()
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0)) { connection in
            let index = counter.value.add(1, ordering: .relaxed).oldValue
            connection.start(handler: Session(offence: index == 0 ? offence : nil))
        }
        return HostileServer(listener: listener, counter: counter)
    }

    func close() async {
        await listener.closeAndWait()
    }
}

/// One connection of a ``HostileServer``; only touched on its connection's event loop.
private final class Session: ConnectionHandler {
    private var offence: HostileServer.Offence?
    /// Set once the offence is committed: after it the session answers nothing.
    private var offended = false
    private var decoder = FrameDecoder()
    private var frames: [Frame] = []

    init(offence: HostileServer.Offence?) {
        self.offence = offence
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            connection.close(.immediately)
            return
        }
        let received = frames
        frames.removeAll(keepingCapacity: true)
        for frame in received where !offended { answer(frame, on: connection) }
        connection.flush()
    }

    private func answer(_ frame: Frame, on connection: Connection) {
        switch frame {
        case .hello:
            if case .answerHello(let bytes) = offence {
                connection.write(bytes)
                offended = true
                return
            }
            // A de-duplication window, so that a request written (after a login) before the offence
            // is sent again.
            let welcome = Frame.Welcome(
                serverID: "hostile", heartbeatMilliseconds: 15_000, dedupeWindowMilliseconds: 60_000)
            send(.welcome(welcome), on: connection)
        case .sync:
            if case .afterSync(let bytes) = offence {
                connection.write(bytes)
                offended = true
                return
            }
            send(.push(Frame.Push(topic: "ticks", payload: Array("tick".utf8))), on: connection)
        case .request(let request):
            send(.response(Frame.Response(requestID: request.requestID, payload: request.payload)), on: connection)
        case .ping(let ping):
            send(.pong(Frame.Pong(nonce: ping.nonce)), on: connection)
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

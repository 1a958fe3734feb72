import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Synchronization

/// A hand-driven server for client tests of what a real server never does: late and duplicate
/// replies, silence, garbage, wrong frames. Each frame the client sends goes to `script` on the
/// connection's event loop, with a handle to answer.
final class ScriptedServer: Sendable {
    final class Peer: ConnectionHandler, @unchecked Sendable {
        let connection: Connection
        private var decoder = FrameDecoder()
        private var frames: [Frame] = []
        private let script: @Sendable (Frame, Peer) -> Void
        let received = Mailbox<Frame>()

        init(connection: Connection, script: @escaping @Sendable (Frame, Peer) -> Void) {
            self.connection = connection
            self.script = script
        }

        func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
            do { try decoder.decode(bytes, into: &frames) } catch { connection.close(.immediately) }
            let batch = frames
            frames.removeAll()
            for frame in batch {
                received.put(frame)
                script(frame, self)
            }
        }

        func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {}

        /// Sends frames (any thread).
        func send(_ frames: Frame...) {
            var bytes: [UInt8] = []
            for frame in frames { frame.encodeDelimited(into: &bytes) }
            sendRaw(bytes)
        }

        func sendRaw(_ bytes: [UInt8]) {
            let connection = self.connection
            connection.eventLoop.execute { connection.write(bytes) }
        }

        /// The standard answer to Hello.
        func welcome(heartbeatMilliseconds: UInt32 = 0, dedupeWindowMilliseconds: UInt32 = 0) {
            send(
                .welcome(
                    Frame.Welcome(
                        serverID: "scripted", heartbeatMilliseconds: heartbeatMilliseconds,
                        dedupeWindowMilliseconds: dedupeWindowMilliseconds)))
        }
    }

    private let listener: Listener

    /// Starts listening (over TLS with `tls`); `script` sees every frame from every connection.
    static func start(tls: TLSContext? = nil, _ script: @escaping @Sendable (Frame, Peer) -> Void) async throws
        -> ScriptedServer
    {
        let peers = Mailbox<Peer>()
        let context: (@Sendable () -> TLSContext?)? = tls.map { tls in { @Sendable in tls } }
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0), tls: context) { connection in
            let peer = Peer(connection: connection, script: script)
            connection.start(handler: peer)
            peers.put(peer)
        }
        return ScriptedServer(listener: listener, peers: peers)
    }

    /// Starts a server that welcomes every client and answers no request: each one goes to `held`.
    static func holdingRequests(in held: Mailbox<Frame.Request>) async throws -> ScriptedServer {
        try await start { frame, peer in
            switch frame {
            case .hello: peer.welcome()
            case .request(let request): held.put(request)
            default: break
            }
        }
    }

    private init(listener: Listener, peers: Mailbox<Peer>) {
        self.listener = listener
        self.peersBox = peers
    }

    private let peersBox: Mailbox<Peer>

    var endpoint: Endpoint { .tcp(host: "127.0.0.1", port: listener.localAddress.port ?? 0) }

    func nextPeer() async throws -> Peer {
        try await peersBox.next(within: .seconds(20), "a connection to the scripted server")
    }

    func stop() {
        listener.close()
    }
}

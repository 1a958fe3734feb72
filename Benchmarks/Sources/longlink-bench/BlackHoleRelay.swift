import LongLinkTransport
import LongLinkWire
import Synchronization

/// A tiny TCP relay for the recovery scenario: forwards bytes both ways between each accepted
/// connection and the server until ``blackHole()``, after which it silently drops everything in
/// both directions and keeps the sockets open (no FIN, no RST), as a dead NAT or a dead Wi-Fi does.
///
/// `LongLinkTesting`'s `FaultProxy` can do the same; the bench keeps this relay because it needs
/// only this one fault and measures nothing of the proxy's own cost.
final class BlackHoleRelay: Sendable {
    private let listener: Listener
    private let group: EventLoopGroup
    private let state: RelayState

    var port: Int { listener.localAddress.port ?? 0 }

    private init(listener: Listener, group: EventLoopGroup, state: RelayState) {
        self.listener = listener
        self.group = group
        self.state = state
    }

    /// Listens on 127.0.0.1 (any port) and relays to 127.0.0.1:`upstreamPort`.
    static func start(upstreamPort: Int) async throws -> BlackHoleRelay {
        let group = EventLoopGroup(loopCount: 1, name: "bench-relay")
        let state = RelayState()
        let upstream = Endpoint.tcp(host: "127.0.0.1", port: upstreamPort)
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0), group: group) { accepted in
            Task {
                guard let outbound = try? await Connection.connect(to: upstream, on: accepted.eventLoop) else {
                    accepted.eventLoop.execute { accepted.close(.immediately) }
                    return
                }
                accepted.eventLoop.execute {
                    let downstream = RelaySide(state: state, peer: outbound)
                    let upstreamSide = RelaySide(state: state, peer: accepted)
                    state.track(accepted, outbound)
                    accepted.start(handler: downstream)
                    outbound.start(handler: upstreamSide)
                }
            }
        }
        return BlackHoleRelay(listener: listener, group: group, state: state)
    }

    /// From now on, nothing gets through in either direction and nothing is closed.
    func blackHole() {
        state.blackHoled.store(true, ordering: .releasing)
    }

    /// Stops listening, closes every relayed connection and the relay's loop.
    func close() async {
        await listener.closeAndWait()
        let loop = group.loops[0]
        let connections = state.all()
        loop.execute {
            for connection in connections { connection.close(.immediately) }
        }
        await group.shutdownAndWait()
    }
}

private final class RelayState: Sendable {
    let blackHoled = Atomic<Bool>(false)
    private let connections = Mutex<[Connection]>([])

    var isBlackHoled: Bool { blackHoled.load(ordering: .acquiring) }

    func track(_ first: Connection, _ second: Connection) {
        connections.withLock { $0 += [first, second] }
    }

    func all() -> [Connection] {
        connections.withLock { $0 }
    }
}

/// One direction of a relayed pair; runs on the pair's loop.
private final class RelaySide: ConnectionHandler {
    private let state: RelayState
    private let peer: Connection

    init(state: RelayState, peer: Connection) {
        self.state = state
        self.peer = peer
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !state.isBlackHoled else { return }
        peer.write(Array(bytes))
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        guard !state.isBlackHoled else { return }
        peer.close(.graceful)
    }
}

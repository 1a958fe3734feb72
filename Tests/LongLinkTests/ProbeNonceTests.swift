import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLink

/// A server that answers pings it has not seen yet must not look closer than it is.
@Suite("Probe nonces", .sharedMachine)
struct ProbeNonceTests {
    /// The server holds each real `Pong` 100 ms, and meanwhile sends `Pong(1)`, `Pong(2)` and
    /// `Pong(3)` every 5 ms: with nonces 1, 2, 3 the probe would take those for answers and
    /// measure about 0 ms. With random nonces they match nothing, are counted, and every round
    /// trip measured is the real one.
    @Test func earlyPongsMatchNothingAndAreCounted() async throws {
        let hold = Duration.milliseconds(100)
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello:
                peer.welcome()
                Self.flood(peer, left: 4_000)
            case .ping(let ping):
                _ = peer.connection.eventLoop.scheduleTimer(after: hold) {
                    peer.send(.pong(Frame.Pong(nonce: ping.nonce)))
                }
            default: break
            }
        }
        defer { server.stop() }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.balancing.probePings = 3
        configuration.balancing.probeTimeout = .seconds(20)
        let report = await LongLinkClient.probe([server.endpoint], configuration: configuration)
        let probe = try #require(report.probes.first)
        #expect(probe.state == .reachable, "\(String(describing: probe.error))")
        #expect(probe.roundTrips.count == 3)
        #expect(probe.roundTrips.allSatisfy { $0 >= hold }, "\(probe.roundTrips)")
        #expect(probe.unmatchedPongs > 0)
    }

    /// Sends `Pong(1)`, `Pong(2)`, `Pong(3)` every 5 ms until the connection closes (at most
    /// `left` times).
    private static func flood(_ peer: ScriptedServer.Peer, left: Int) {
        guard left > 0, !peer.connection.isClosed else { return }
        peer.send(
            .pong(Frame.Pong(nonce: 1)), .pong(Frame.Pong(nonce: 2)), .pong(Frame.Pong(nonce: 3)))
        _ = peer.connection.eventLoop.scheduleTimer(after: .milliseconds(5)) { flood(peer, left: left - 1) }
    }
}

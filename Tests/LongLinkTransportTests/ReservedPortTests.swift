import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A port a test needs before its server listens (a client dialling while offline, a restart on
/// the same port) stays the test's: no one else binds it meanwhile.
@Suite("Reserved ports", .sharedMachine)
struct ReservedPortTests {
    /// The error of a connect to `port` (nil when it connected).
    private func connectError(to port: Int, on loop: EventLoop) async throws -> LongLinkError? {
        try await within(.seconds(10), "connect to \(port)") { () async -> LongLinkError? in
            do throws(LongLinkError) {
                let connection = try await Connection.connect(to: .tcp(host: "127.0.0.1", port: port), on: loop)
                connection.close(.immediately)
                return nil
            } catch {
                return error
            }
        }
    }

    private func listener(on port: Int, reusePort: Bool) async throws(LongLinkError) -> Listener {
        try await Listener.bind(
            to: .tcp(host: "127.0.0.1", port: port), reusePort: reusePort, tls: nil,
            onAccept: { $0.close(.immediately) })
    }

    @Test func nobodyElseBindsAReservedPortAndItsServerDoesAgainAndAgain() async throws {
        let loop = EventLoop(name: "reserved")
        let reserved = try ReservedPort()
        let port = reserved.port
        // Offline: refused at once (bound, not listening), never a self-connect.
        #expect(try await connectError(to: port, on: loop)?.code == .connectionRefused)
        // Another test's server: kept out, where a port chosen and released would have let it in.
        do {
            let intruder = try await listener(on: port, reusePort: false)
            intruder.close()
            Issue.record("another listener bound the reserved port \(port)")
        } catch {
            #expect((error.underlying as? SystemCallError)?.errno == EADDRINUSE)
        }
        // The server it is reserved for binds it, and again after a stop: no moment in between
        // where another could take it.
        for _ in 0..<2 {
            let server = try await listener(on: port, reusePort: true)
            #expect(try await connectError(to: port, on: loop) == nil)
            await server.closeAndWait()
            #expect(try await connectError(to: port, on: loop)?.code == .connectionRefused)
        }
        reserved.release()
        reserved.release()  // once is enough
        await loop.shutdownAndWait()
    }

    @Test func aHostThatIsNoIPAddressIsRefused() {
        #expect(throws: LongLinkError.self) { try ReservedPort(host: "localhost") }
    }
}

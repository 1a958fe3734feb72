import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a connect and returns its error (or nil when it connected, closing the connection).
private func connectError(
    _ endpoint: Endpoint, options: ConnectionOptions = .init(), on loop: EventLoop, limit: Duration = .seconds(10)
) async throws -> LongLinkError? {
    try await within(limit, "connect to \(endpoint)") { () async -> LongLinkError? in
        do throws(LongLinkError) {
            let connection = try await Connection.connect(to: endpoint, options: options, on: loop)
            connection.close(.immediately)
            return nil
        } catch {
            return error
        }
    }
}

@Suite("Connecting", .sharedMachine)
struct ConnectTests {
    @Test("a port nobody listens on is connectionRefused")
    func refused() async throws {
        let loop = EventLoop(name: "refused")
        // Bound but not listening: the port stays ours and the kernel answers with RST.
        let reserved = try RawSocket(listenBacklog: nil)
        defer { reserved.closeSocket() }
        let error = try await connectError(.tcp(host: "127.0.0.1", port: reserved.port), on: loop)
        #expect(error?.code == .connectionRefused)
        #expect((error?.underlying as? SystemCallError)?.errno == ECONNREFUSED)
        await loop.shutdownAndWait()
    }

    @Test("a full accept queue on loopback makes the connect time out")
    func timeout() async throws {
        let loop = EventLoop(name: "timeout")
        // Listens with backlog 0 and never accepts: once its queue is full, the kernel drops new SYNs.
        let blackHole = try RawSocket(listenBacklog: 0)
        defer { blackHole.closeSocket() }
        var options = ConnectionOptions()
        options.connectTimeout = .milliseconds(200)
        var fillers: [Connection] = []
        var timedOut: LongLinkError?
        var elapsed = Duration.zero
        for _ in 0..<8 {
            let start = ContinuousClock.now
            do throws(LongLinkError) {
                fillers.append(
                    try await Connection.connect(
                        to: .tcp(host: "127.0.0.1", port: blackHole.port), options: options, on: loop))
            } catch {
                timedOut = error
                elapsed = .now - start
                break
            }
        }
        #expect(!fillers.isEmpty, "the first connections fill the queue")
        #expect(timedOut?.code == .connectTimeout)
        #expect(elapsed >= .milliseconds(190) && elapsed < .seconds(3))
        for filler in fillers {
            filler.close(.immediately)
        }
        await loop.shutdownAndWait()
    }

    @Test("cancelling the connecting task ends the connect with cancelled")
    func cancelled() async throws {
        let loop = EventLoop(name: "cancel")
        let blackHole = try RawSocket(listenBacklog: 0)
        defer { blackHole.closeSocket() }
        var options = ConnectionOptions()
        options.connectTimeout = .milliseconds(200)
        // Fill the queue first, as above.
        var fillers: [Connection] = []
        for _ in 0..<8 {
            guard
                let filler = try? await Connection.connect(
                    to: .tcp(host: "127.0.0.1", port: blackHole.port), options: options, on: loop)
            else {
                break
            }
            fillers.append(filler)
        }
        options.connectTimeout = .seconds(30)
        let hanging = Task { () async -> LongLinkError? in
            do throws(LongLinkError) {
                _ = try await Connection.connect(
                    to: .tcp(host: "127.0.0.1", port: blackHole.port), options: options, on: loop)
                return nil
            } catch {
                return error
            }
        }
        hanging.cancel()
        let error = try await within(.seconds(5), "the cancelled connect") { await hanging.value }
        #expect(error?.code == .cancelled)
        for filler in fillers {
            filler.close(.immediately)
        }
        await loop.shutdownAndWait()
    }

    @Test("an unresolvable name is addressResolutionFailed")
    func unresolvable() async throws {
        let loop = EventLoop(name: "unresolvable")
        let error = try await connectError(.tcp(host: "no-such-host.invalid", port: 80), on: loop, limit: .seconds(30))
        #expect(error?.code == .addressResolutionFailed)
        await loop.shutdownAndWait()
    }

    @Test("invalid options, ports and paths are invalidConfiguration")
    func invalidConfiguration() async throws {
        let loop = EventLoop(name: "invalid")
        var options = ConnectionOptions()
        options.writeBufferLowWatermark = options.writeBufferHighWatermark + 1
        #expect(
            try await connectError(.tcp(host: "127.0.0.1", port: 1), options: options, on: loop)?.code
                == .invalidConfiguration)
        var noEagerFlush = ConnectionOptions()
        noEagerFlush.eagerFlushBytes = 0
        #expect(throws: LongLinkError.self) { try noEagerFlush.validate() }
        #expect(try await connectError(.tcp(host: "127.0.0.1", port: 70_000), on: loop)?.code == .invalidConfiguration)
        let longPath = "/tmp/" + String(repeating: "x", count: 200)
        #expect(try await connectError(.unix(path: longPath), on: loop)?.code == .invalidConfiguration)
        await loop.shutdownAndWait()
    }

    @Test("a Unix path without a socket file is connectionRefused")
    func missingUnixSocket() async throws {
        let loop = EventLoop(name: "missing-unix")
        let error = try await connectError(.unix(path: temporaryUnixPath("missing")), on: loop)
        #expect(error?.code == .connectionRefused)
        await loop.shutdownAndWait()
    }

    @Test("connecting on a stopped loop is shutdown")
    func stoppedLoop() async throws {
        let loop = EventLoop(name: "stopped")
        await loop.shutdownAndWait()
        let error = try await connectError(.tcp(host: "127.0.0.1", port: 1), on: loop)
        #expect(error?.code == .shutdown)
    }
}

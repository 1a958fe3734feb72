import LongLinkWire
import LongLinkTestSupport
import Testing

@testable import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Echo over every kind of socket", .sharedMachine)
struct EchoTests {
    /// Connects to an echo server at `endpoint`, sends a payload in several sends, and checks it comes back.
    private func echo(bind endpoint: Endpoint, connectTo target: ((Endpoint) -> Endpoint)? = nil) async throws {
        let serverGroup = EventLoopGroup(loopCount: 2, name: "echo-server")
        let clientLoop = EventLoop(name: "echo-client")
        let server = try await TestServer.start(endpoint, group: serverGroup) { RecordingHandler(echo: true) }
        let destination = target?(server.endpoint) ?? server.endpoint
        let (connection, handler) = try await connectAndStart(destination, on: clientLoop)

        #expect(connection.remoteAddress == server.listener.localAddress)
        let payload = patternBytes(from: 0, count: 300_000)
        for start in stride(from: 0, to: payload.count, by: 100_000) {
            try await connection.send(Array(payload[start..<start + 100_000]))
        }
        let log = try await handler.waitForBytes(payload.count)
        #expect(log.bytes == payload)
        #expect(log.callbacksOffLoop == 0)

        let (_, serverHandler) = try await server.connection()
        #expect(serverHandler.log.value.byteCount == payload.count)
        #expect(server.acceptedOnWrongLoop.value == 0)

        connection.close()
        let closed = try await handler.waitForClose()
        #expect(closed.closeCount == 1)
        #expect(closed.closedCleanly)
        try await serverHandler.waitForClose()
        #expect(serverHandler.log.value.closedCleanly)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("TCP over IPv4 loopback")
    func ipv4() async throws {
        try await echo(bind: .tcp(host: "127.0.0.1", port: 0))
    }

    @Test("TCP over IPv6 loopback", .enabled(if: ipv6LoopbackAvailable(), "IPv6 loopback (::1) is unavailable here"))
    func ipv6() async throws {
        try await echo(bind: .tcp(host: "::1", port: 0))
    }

    @Test("Unix-domain socket")
    func unixDomain() async throws {
        let path = temporaryUnixPath("echo")
        try await echo(bind: .unix(path: path))
        // The listener removed the socket file it created.
        #expect(access(path, F_OK) != 0)
    }

    @Test("localhost through the resolver")
    func localhost() async throws {
        // Listen on the address localhost resolves to first, connect by name.
        let first = try await Resolver.resolve(host: "localhost", port: 0)[0]
        try await echo(bind: .tcp(host: first.host, port: 0)) { endpoint in
            guard case .tcp(_, let port) = endpoint else {
                return endpoint
            }
            return .tcp(host: "localhost", port: port)
        }
    }

    @Test("accepted connections are spread round robin and onAccept runs on the connection's loop")
    func acceptSpreadsOverLoops() async throws {
        let serverGroup = EventLoopGroup(loopCount: 2, name: "spread-server")
        let clientLoop = EventLoop(name: "spread-client")
        let server = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: serverGroup)
        var clients: [Connection] = []
        for _ in 0..<4 {
            let (connection, _) = try await connectAndStart(server.endpoint, on: clientLoop)
            clients.append(connection)
        }
        let accepted = try await server.accepted.wait("4 accepted connections") { $0.count == 4 }
        let loops = Set(accepted.map { ObjectIdentifier($0.eventLoop) })
        #expect(loops.count == 2)
        #expect(server.acceptedOnWrongLoop.value == 0)
        #expect(Set(accepted.map(\.id)).count == 4)
        for client in clients {
            client.close(.immediately)
        }
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("a stale Unix socket file is replaced; a live one is an error")
    func staleUnixSocket() async throws {
        let group = EventLoopGroup(loopCount: 1, name: "stale-unix")
        let path = temporaryUnixPath("stale")
        // A socket file nobody listens on.
        let stale = socket(AF_UNIX, Sys.streamType, 0)
        #expect(SocketAddress(unixPath: path).withSockAddr { bind(stale, $0, $1) } == 0)
        close(stale)
        #expect(access(path, F_OK) == 0)
        let listener = try await Listener.bind(to: .unix(path: path), group: group) { $0.close() }
        await #expect(throws: LongLinkError.self) {
            _ = try await Listener.bind(to: .unix(path: path), group: group) { $0.close() }
        }
        #expect(access(path, F_OK) == 0, "the failed bind left the live socket file alone")
        listener.close()
        #expect(access(path, F_OK) != 0)
        await group.shutdownAndWait()
    }
}

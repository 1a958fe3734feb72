// This file imports only LongLinkServer: everything it uses is what a backend team gets from
// `import LongLinkServer` alone (handlers, their context, the server, its configuration).
import LongLinkServer
import Testing

@Suite("What import LongLinkServer gives a server", .timeLimit(.minutes(10)))
struct ServerSurfaceTests {
    @Test func handlersNeedOnlyLongLinkServerTypes() async throws {
        var router = Router()
        router.register("echo") { payload, _ in payload }
        router.register("whoami", synchronous: { _, context in Array(context.clientID.utf8) })
        router.register("login") { payload, context in
            guard !payload.isEmpty else { throw LongLinkError(code: .unauthenticated, message: "no user") }
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        #expect(router.methods == ["echo", "login", "whoami"])

        var configuration = ServerConfiguration()
        configuration.endpoint = .tcp(host: "127.0.0.1", port: 0)
        configuration.connectionOptions.noDelay = true
        let server = LongLinkServer(configuration: configuration, router: router, stores: .inMemory())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let address: SocketAddress = try await server.localAddress
            #expect(address.port != nil)
            #expect(server.kick(principal: "nobody", code: StatusCode.unauthenticated, reason: "test") == 0)
            server.shutdown()
            try await group.waitForAll()
        }
    }
}

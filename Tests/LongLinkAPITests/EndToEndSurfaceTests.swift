// This file imports LongLink and LongLinkServer, as an app's integration test or the demo does:
// the types both re-export (LongLinkError, Endpoint, …) are one type, not two ambiguous ones.
import LongLink
import LongLinkServer
import Testing

/// Every wait is bounded by the time limit: when it cancels the test, the loops end and the tasks
/// are cancelled (which stops the client and the server).
@Suite("A client and a server through their public API alone", .timeLimit(.minutes(10)))
struct EndToEndSurfaceTests {
    private func value(of task: Task<Void, any Error>) async throws {
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    @Test func aRequestAPushAndAGracefulShutdown() async throws {
        var router = Router()
        router.register("echo") { payload, _ in payload }
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        let server = LongLinkServer(router: router)
        let serverTask = Task { try await server.run() }
        let address = try await server.localAddress
        let endpoint: Endpoint = .tcp(host: address.host, port: address.port ?? 0)

        let logins = AsyncStream<ServerInfo>.makeStream()
        var configuration = ClientConfiguration(endpoints: [endpoint])
        configuration.login = { session in
            logins.continuation.yield(session.server)
            _ = try await session.request("login", payload: Array("alice".utf8))
        }
        let client = LongLinkClient(configuration: configuration)
        let alerts = client.throwingPushes(topic: "alerts")
        let clientTask = Task { try await client.run() }

        let reply = try await client.request("echo", payload: [1, 2, 3])
        #expect(reply == [1, 2, 3])
        var infos = logins.stream.makeAsyncIterator()
        #expect(await infos.next()?.serverID == server.configuration.serverID)
        _ = try await server.push(to: "alice", topic: "alerts", payload: Array("hi".utf8))

        var received: [String] = []
        var ending: LongLinkError?
        do throws(LongLinkError) {
            for try await push in alerts {
                received.append(String(decoding: push.payload, as: UTF8.self))
                client.shutdown(gracePeriod: .seconds(1))
            }
        } catch {
            ending = error
        }
        #expect(received == ["hi"])
        #expect(ending?.code == .shutdown)
        try await value(of: clientTask)
        server.shutdown()
        try await value(of: serverTask)
    }
}

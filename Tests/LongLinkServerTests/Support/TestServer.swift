import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Synchronization

/// The server tests' handlers: the common ones and those below.
extension Probe {
    func router() -> Router {
        var router = commonRouter()
        router.register("echo.sync", synchronous: { payload, _ in payload })
        router.register(
            "fail.sync",
            synchronous: { _, _ in
                throw LongLinkError(code: .failedPrecondition, message: "not now")
            })
        router.register(
            "count.sync",
            synchronous: { payload, _ in
                let n = self.executions.add(1, ordering: .relaxed).newValue
                return Array("execution \(n)".utf8) + payload
            })
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return Array("welcome".utf8)
        }
        // Inline, so that requests written right behind it in one batch are already bound.
        router.register(
            "login.sync",
            synchronous: { payload, context in
                context.bind(principal: String(decoding: payload, as: UTF8.self))
                return Array("welcome".utf8)
            })
        router.register("login.exclusive") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self), exclusive: true)
            return Array("welcome".utf8)
        }
        // Binds, then waits for the gate: a login still running when its copy arrives.
        router.register("login.gated") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            self.events.put("started \(context.requestID)")
            _ = try await self.gate.next(within: .seconds(20), "the test to open the gate")
            return Array("welcome".utf8)
        }
        router.register("whoami") { _, context in Array((context.principal ?? "-").utf8) }
        router.register("fail") { payload, _ in
            let text = String(decoding: payload, as: UTF8.self)
            let parts = text.split(separator: ":", maxSplits: 1)
            throw LongLinkError(
                code: .init(status: StatusCode(rawValue: UInt32(parts[0]) ?? 2)),
                message: parts.count > 1 ? String(parts[1]) : "")
        }
        router.register("crash") { _, _ in
            struct Secret: Error {}
            throw Secret()
        }
        router.register("gated") { payload, context in
            self.events.put("started \(context.requestID)")
            _ = try await self.gate.next(within: .seconds(20), "the test to open the gate")
            let n = self.executions.add(1, ordering: .relaxed).newValue
            return Array("execution \(n)".utf8) + payload
        }
        router.register("big") { payload, _ in
            [UInt8](repeating: 0x5A, count: Int(String(decoding: payload, as: UTF8.self)) ?? 0)
        }
        struct Point: Codable, Sendable {
            var x: Int
            var y: Int
        }
        router.register("mirror", request: Point.self) { point, _ in Point(x: point.y, y: point.x) }
        return router
    }
}

/// Runs a server on a free loopback port around `body`, then shuts it down and waits for `run()`.
func withServer(
    _ configuration: ServerConfiguration = .testing, probe: Probe = Probe(),
    _ body: (LongLinkServer, SocketAddress) async throws -> Void
) async throws {
    let server = LongLinkServer(configuration: configuration, router: probe.router())
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        do {
            let address = try await server.localAddress
            try await body(server, address)
        } catch {
            server.shutdown()
            try? await group.waitForAll()
            throw error
        }
        server.shutdown()
        try await group.waitForAll()
    }
}

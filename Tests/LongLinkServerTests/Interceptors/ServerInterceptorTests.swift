import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

/// Records what it sees around the handler, as `name>` before and `<name` after.
private struct Recording: ServerInterceptor {
    let name: String
    let log: Watched<[String]>

    func intercept(
        _ payload: [UInt8], context: RequestContext,
        next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
    ) async throws -> [UInt8] {
        log.update { $0.append("\(name)> \(context.method) \(context.requestID) \(context.principal ?? "-")") }
        defer { log.update { $0.append("<\(name)") } }
        // Marks the echo's payload, to show the handler got what the interceptor passed on.
        return try await next(context.method == "echo.sync" ? payload + Array(name.utf8) : payload, context)
    }
}

/// Refuses every call but the login.
private struct RequireLogin: ServerInterceptor {
    func intercept(
        _ payload: [UInt8], context: RequestContext,
        next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
    ) async throws -> [UInt8] {
        guard context.principal != nil || context.method == "login" else {
            throw LongLinkError(code: .unauthenticated, message: "log in first")
        }
        return try await next(payload, context)
    }
}

@Suite("Server interceptors", .sharedMachine)
struct ServerInterceptorTests {
    private func withInterceptedServer(
        _ interceptors: [any ServerInterceptor], probe: Probe = Probe(),
        _ body: (LongLinkServer, SocketAddress) async throws -> Void
    ) async throws {
        var router = probe.router()
        router.interceptors = interceptors
        let server = LongLinkServer(configuration: .testing, router: router)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.shutdown() }
            try await body(server, try await server.localAddress)
        }
    }

    @Test func theyRunInOrderAroundTheHandlerWithItsContext() async throws {
        let log = Watched<[String]>([])
        try await withInterceptedServer([Recording(name: "a", log: log), Recording(name: "b", log: log)]) {
            _, address in
            let client = try await FrameClient.loggedIn(address, clientID: "order", as: "carol")
            log.update { $0.removeAll() }
            // Synchronous routes go through them too.
            let reply = try await client.call("echo.sync", bytes("x"), id: "r1")
            #expect(reply.text == "xab")
            #expect(log.value == ["a> echo.sync r1 carol", "b> echo.sync r1 carol", "<b", "<a"])
        }
    }

    @Test func aRefusalIsTheCallersStatusAndTheHandlerDoesNotRun() async throws {
        let probe = Probe()
        try await withInterceptedServer([RequireLogin()], probe: probe) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "anonymous")
            let refused = try await client.call("count.sync", id: "1")
            #expect(refused.status == Frame.Status(code: .unauthenticated, message: "log in first"))
            #expect(probe.executions.load(ordering: .relaxed) == 0)
            try await client.logIn(as: "dave")
            #expect(try await client.call("count.sync", id: "2").text == "execution 1")
        }
    }
}

@Suite("Rate limit interceptor", .sharedMachine)
struct RateLimitInterceptorTests {
    private func withLimitedServer(
        _ limiter: RateLimitInterceptor, _ body: (SocketAddress) async throws -> Void
    ) async throws {
        var router = Probe().router()
        router.interceptors = [limiter]
        var configuration = ServerConfiguration.testing
        configuration.maxInFlightPerConnection = 1_000
        let server = LongLinkServer(configuration: configuration, router: router)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.shutdown() }
            try await body(try await server.localAddress)
        }
    }

    /// Writes `count` calls at once and counts the answers by status.
    private func flood(_ client: FrameClient, _ count: Int, tag: String) async throws -> (ok: Int, limited: Int) {
        for n in 0..<count {
            try await client.send(.request(Frame.Request(requestID: "\(tag)-\(n)", method: "echo", payload: [1])))
        }
        var ok = 0
        var limited = 0
        for _ in 0..<count {
            let response = try await client.response()
            switch response.status?.code {
            case nil: ok += 1
            case .resourceExhausted?: limited += 1
            case let other: Issue.record("unexpected status \(String(describing: other))")
            }
        }
        return (ok, limited)
    }

    @Test func aFloodSpendsItsOwnBucketAndNoOneElses() async throws {
        let clock = ManualClock()
        let limiter = try RateLimitInterceptor(rate: 10, burst: 20, clock: clock)
        try await withLimitedServer(limiter) { address in
            let flooder = try await FrameClient.loggedIn(address, clientID: "flooder", as: "mallory")
            let first = try await flood(flooder, 300, tag: "a")
            #expect(first.ok == 20)
            #expect(first.limited == 280)
            // Another principal still has its whole burst.
            let quiet = try await FrameClient.loggedIn(address, clientID: "quiet", as: "alice")
            #expect(try await flood(quiet, 20, tag: "q") == (20, 0))
            // A second connection of the flooding principal shares its empty bucket.
            let second = try await FrameClient.loggedIn(address, clientID: "flooder-2", as: "mallory")
            #expect(try await flood(second, 5, tag: "b") == (0, 5))
            // A second refills 10.
            await clock.advance(by: .seconds(1))
            #expect(try await flood(flooder, 15, tag: "c") == (10, 5))
            #expect(limiter.refusals == 290)
        }
    }

    @Test func bucketsAreBoundedAndFullOnesGoFirst() async throws {
        let clock = ManualClock()
        let limiter = try RateLimitInterceptor(rate: 1, burst: 2, maxBuckets: 2, methods: ["echo"], clock: clock)
        try await withLimitedServer(limiter) { address in
            var clients: [FrameClient] = []
            for n in 0..<3 {
                let client = try await FrameClient.connect(to: address)
                _ = try await client.handshake(clientID: "anonymous-\(n)")
                clients.append(client)
            }
            #expect(try await flood(clients[0], 1, tag: "0") == (1, 0))
            #expect(try await flood(clients[1], 1, tag: "1") == (1, 0))
            // Two buckets in use, neither full: no room for a third.
            #expect(try await flood(clients[2], 1, tag: "2") == (0, 1))
            #expect(limiter.bucketCount == 2)
            // Methods it does not limit pass.
            #expect(try await clients[2].call("echo.sync", bytes("x"), id: "free").text == "x")
            // Once the others refilled, their buckets make room.
            await clock.advance(by: .seconds(2))
            #expect(try await flood(clients[2], 1, tag: "3") == (1, 0))
            #expect(limiter.bucketCount == 1)
        }
    }

    @Test func invalidSettingsAreTypedErrors() {
        #expect(throws: LongLinkError.self) { try RateLimitInterceptor(rate: 0, burst: 1) }
        #expect(throws: LongLinkError.self) { try RateLimitInterceptor(rate: 1, burst: 0) }
        #expect(throws: LongLinkError.self) { try RateLimitInterceptor(rate: 1, burst: 1, maxBuckets: 0) }
    }
}

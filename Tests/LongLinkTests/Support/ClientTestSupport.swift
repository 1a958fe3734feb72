import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Synchronization

/// The client tests' server handlers: the common ones and those below.
extension Probe {
    func router() -> Router {
        var router = commonRouter()
        router.register("peer") { _, context in
            Array("\(context.peerCertificateSubject ?? "none") \(context.peerCertificatePin ?? "none")".utf8)
        }
        router.register("login") { payload, context in
            let user = String(decoding: payload, as: UTF8.self)
            if user == "intruder" { throw LongLinkError(code: .unauthenticated, message: "bad credentials") }
            context.bind(principal: user)
            self.events.put("login \(user)")
            return Array("welcome \(user)".utf8)
        }
        // The request's metadata as sorted `key=value` lines.
        router.register("metadata") { _, context in
            Array(context.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)\n" }.joined().utf8)
        }
        router.register("record") { payload, _ in
            self.events.put("record \(String(decoding: payload, as: UTF8.self))")
            return payload
        }
        router.register("fail") { payload, _ in
            throw LongLinkError(code: .notFound, message: String(decoding: payload, as: UTF8.self))
        }
        // The server's own deadline answer, at once: what a client sees when the server's
        // `timeout_ms` budget runs out before its own timer fires.
        router.register("expire") { _, _ in
            throw LongLinkError(code: .deadlineExceeded, message: "deadline passed")
        }
        router.register("gated") { payload, context in
            self.events.put("started gated")
            _ = try await self.gate.next(within: .seconds(20), "the test to open the gate")
            let n = self.executions.add(1, ordering: .relaxed).newValue
            return Array("execution \(n)".utf8) + payload
        }
        struct Room: Codable, Sendable {
            var id: Int
            var members: [String]
        }
        struct Enter: Codable, Sendable { var id: Int }
        router.register("room.enter", request: Enter.self) { enter, context in
            Room(id: enter.id, members: [context.principal ?? "anonymous"])
        }
        return router
    }
}

/// A server running on a loopback port for the duration of a test.
final class RunningServer: Sendable {
    let server: LongLinkServer
    let address: SocketAddress
    private let task: Task<Void, any Error>

    private init(server: LongLinkServer, address: SocketAddress, task: Task<Void, any Error>) {
        self.server = server
        self.address = address
        self.task = task
    }

    var endpoint: Endpoint { .tcp(host: address.host, port: address.port ?? 0) }

    /// Starts a server on a port of the system's choice, or on `reserved` (a port the test holds
    /// before the server starts or across its restarts: never one chosen, released and bound later).
    static func start(
        _ configuration: ServerConfiguration = .testing, probe: Probe, on reserved: ReservedPort? = nil,
        store: InMemoryPushStore = InMemoryPushStore()
    ) async throws -> RunningServer {
        try await start(configuration, probe: probe, on: reserved, pushStore: store as any PushStore)
    }

    /// A server keeping its reliable pushes in `pushStore` (a store of the test's own).
    static func start(
        _ configuration: ServerConfiguration = .testing, probe: Probe, on reserved: ReservedPort? = nil,
        pushStore: any PushStore
    ) async throws -> RunningServer {
        var configuration = configuration
        configuration.endpoint = .tcp(host: "127.0.0.1", port: reserved?.port ?? 0)
        configuration.reusesPort = reserved != nil
        let server = LongLinkServer(
            configuration: configuration, router: probe.router(), stores: ServerStores(pushes: pushStore))
        let task = Task { try await server.run() }
        let address = try await server.localAddress
        return RunningServer(server: server, address: address, task: task)
    }

    func stop() async throws {
        server.shutdown()
        try await task.value
    }
}

extension ClientConfiguration {
    static func forTests(_ endpoint: Endpoint, strategy: DeadlineStrategy = .deadlineHeap) -> ClientConfiguration {
        var configuration = ClientConfiguration(endpoints: [endpoint])
        configuration.deadlineStrategy = strategy
        configuration.backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        configuration.defaultTimeout = .seconds(15)
        configuration.connectTimeout = .seconds(2)
        return configuration
    }
}

/// Runs `client.run()` in the background for a test; `stop()` shuts it down and returns how run() ended.
final class RunningClient: Sendable {
    let client: LongLinkClient
    let task: Task<Void, any Error>
    /// How run() ended, once it has.
    private let ended = Mailbox<Result<Void, LongLinkError>>()

    init(_ configuration: ClientConfiguration) {
        let client = LongLinkClient(configuration: configuration)
        let ended = self.ended
        self.client = client
        task = Task {
            do {
                try await client.run()
                ended.put(.success(()))
            } catch {
                ended.put(.failure(error as? LongLinkError ?? LongLinkError(code: .unknown, message: "\(error)")))
                throw error
            }
        }
    }

    /// How run() ended: waits for it within `timeout` (unlike `task.value`, which a test cannot
    /// bound, because awaiting a task's value ignores cancellation).
    func runEnded(within timeout: Duration = .seconds(20)) async throws -> Result<Void, LongLinkError> {
        try await ended.next(within: timeout, "run() to end")
    }

    func waitUntilConnected(within timeout: Duration = .seconds(20)) async throws {
        try await waitForPhase(.connected, within: timeout)
    }

    func waitForPhase(_ phase: ConnectionState.Phase, within timeout: Duration = .seconds(20)) async throws {
        let states = client.connectionStates
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await state in states where state.phase == phase { return }
                throw ConditionTimedOut(what: "phase \(phase) (the client stopped)")
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw ConditionTimedOut(what: "phase \(phase)")
            }
            try await group.next()
            group.cancelAll()
        }
    }

    @discardableResult
    func stop() async -> Result<Void, any Error> {
        client.shutdown()
        return await task.result
    }
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Both ways of enforcing deadlines, for tests that must hold under either.
let deadlineStrategies: [DeadlineStrategy] = [.taskGroup, .deadlineHeap]

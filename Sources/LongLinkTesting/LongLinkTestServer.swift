import LongLinkCore
import Foundation
@_spi(Benchmarks) import LongLinkServer
import LongLinkTransport
import LongLinkWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``LongLinkServer/LongLinkServer`` for tests: started on a free loopback port, restartable on the same port
/// (gracefully or after a crash), stopped without leaving tasks or threads behind.
///
/// ```swift
/// let server = LongLinkTestServer { var router = Router(); router.register("echo") { p, _ in p }; return router }
/// let address = try await server.start()
/// // ... clients connect to address ...
/// try await server.restart(.crash)     // every connection dropped, same port again
/// await server.stop()
/// ```
///
/// When it chooses the port (the configured endpoint's port is 0 on an IP address), the harness holds that port
/// from the first ``start()`` until it is deinitialized, while no instance runs too: no other server or test
/// can take it between a stop and the next start, and a client dialling it meanwhile is refused.
///
/// Each server instance runs on an event loop group of its own (``loopCount`` loops), replacing
/// ``LongLinkServer/ServerConfiguration/eventLoopGroup``: that is how ``crash()`` closes every connection at
/// once. The router is made afresh for every instance by the closure given.
///
/// **Stores survive a restart by default**, as a real server's would on the same disk: unless `stores` is
/// given, every instance opens a ``LongLinkServer/DurableStore`` on one temporary directory the harness owns
/// (``dataDirectory``), so a client that reconnects after ``restart(_:)`` (graceful or `.crash`) gets every
/// reliable push it had not acknowledged, and a resent request the old instance answered is replayed, not run
/// again. A crash closes the store as the end of a process would (what was committed stays, the directory's
/// lock is released) and the next instance reopens it. The directory is removed when the harness is
/// deinitialized. For the stores of a server without a disk, lost at every restart, pass
/// `stores: { .inMemory() }`.
///
/// **Each instance reports a server id of its own** in `Welcome` (`<id>-1`, `<id>-2`, … after the configuration's
/// default random id), so a restart shows in the client's ``LongLink/ServerInfo``, as a new process's would. A
/// ``LongLinkServer/ServerConfiguration/serverID`` set in the configuration is kept for every instance.
///
/// Call the lifecycle methods from one task at a time.
public final class LongLinkTestServer: Sendable {
    /// How ``restart(_:)`` takes the running server down.
    public struct StopMode: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: Sendable, Hashable {
            case graceful
            case crash
        }

        private let wrapped: Wrapped

        /// ``LongLinkServer/LongLinkServer/shutdown()``: `GoAway` to every client, in-flight requests answered.
        public static let graceful = StopMode(wrapped: .graceful)
        /// ``LongLinkTestServer/crash()``: every connection closed at once, no `GoAway`.
        public static let crash = StopMode(wrapped: .crash)

        /// `graceful` or `crash`.
        public var description: String {
            switch wrapped {
            case .graceful: "graceful"
            case .crash: "crash"
            }
        }
    }

    private struct Instance: Sendable {
        var server: LongLinkServer
        var group: EventLoopGroup
        var task: Task<Void, any Error>
    }

    private struct State {
        var instance: Instance?
        var busy = false
        /// The address of the first instance: later ones bind the same.
        var address: SocketAddress?
        /// Holds the port between instances when the harness chose it (see ``ReservedPort``):
        /// while no instance runs, nothing else can take it, and a restart never finds it in use.
        var reservation: ReservedPort?
        var instancesStarted = 0
        /// The directory of the harness's own durable store, made by the first instance that opens it.
        var dataDirectory: String?
    }

    /// The configuration of every instance (with the endpoint replaced by the first instance's address on
    /// restarts, and the event loop group by the instance's own).
    public let configuration: ServerConfiguration
    /// Event loops per instance.
    public let loopCount: Int
    /// How long a start keeps retrying while the port is still in use (a previous instance's socket lingering).
    public let bindRetryTimeout: Duration

    private let makeRouter: @Sendable () -> Router
    private let makeStores: (@Sendable () throws -> ServerStores)?
    private let state = Locked(State())

    /// Creates the harness; nothing listens until ``start()``.
    ///
    /// - Parameters:
    ///   - configuration: the servers' configuration; by default a free loopback port.
    ///   - loopCount: event loops per server instance (at least 1).
    ///   - bindRetryTimeout: how long a start retries binding a port that is still in use.
    ///   - stores: makes the stores of each instance (each instance owns and closes what it is given: see
    ///     ``LongLinkServer/LongLinkServer/init(configuration:router:stores:)``). nil, the default, opens the
    ///     harness's durable store on ``dataDirectory`` for each instance, with the budgets of `configuration`:
    ///     pushes and stored replies survive restarts. `{ .inMemory() }` gives each instance stores of its own in
    ///     memory, so a restart loses every push not yet acknowledged and every stored reply.
    ///   - router: makes the router of each instance.
    public init(
        configuration: ServerConfiguration = .init(), loopCount: Int = 1, bindRetryTimeout: Duration = .seconds(5),
        stores: (@Sendable () throws -> ServerStores)? = nil, router: @escaping @Sendable () -> Router
    ) {
        self.configuration = configuration
        self.loopCount = max(1, loopCount)
        self.bindRetryTimeout = bindRetryTimeout
        self.makeRouter = router
        self.makeStores = stores
    }

    deinit {
        // Forgotten stop(): do not leave the threads running.
        let (instance, directory) = state.withLock { ($0.instance, $0.dataDirectory) }
        if let instance {
            instance.server.shutdown()
            instance.group.shutdown()
        }
        if let directory {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    // MARK: Lifecycle

    /// Starts a server instance and returns its address: the configured endpoint the first time, the same address
    /// (same port) every later time. Retries for up to ``bindRetryTimeout`` while that port is still in use.
    ///
    /// Throws what the server throws when it cannot start (``LongLinkCore/LongLinkError``), or
    /// `failedPrecondition` when an instance is running or another lifecycle call is under way.
    @discardableResult
    public func start() async throws -> SocketAddress {
        try reserve(requireRunning: false)
        defer { release() }
        return try await launch()
    }

    /// Stops the running instance gracefully (``LongLinkServer/LongLinkServer/shutdown()``: `GoAway`, in-flight
    /// handlers answered within the drain timeout) and returns once its task and event loops have ended. Does
    /// nothing when no instance runs.
    public func stop() async {
        guard let instance = take() else {
            return
        }
        await Self.stopGracefully(instance)
    }

    /// Takes the running instance down abruptly, like a crashed process (``LongLinkServer/LongLinkServer/abort()``):
    /// the listener closes, every connection is reset without a `GoAway`, and handlers still running are cancelled.
    /// Returns once the instance and its event loops are gone; ``start()`` brings a new one up on the same port.
    /// Does nothing when no instance runs.
    public func crash() async {
        guard let instance = take() else {
            return
        }
        await Self.crash(instance)
    }

    /// Takes the running instance down (`mode`) and starts a new one on the same address; returns that address.
    /// Starts one when none runs.
    @discardableResult
    public func restart(_ mode: StopMode = .graceful) async throws -> SocketAddress {
        try reserve(requireRunning: nil)
        defer { release() }
        let old = state.withLock { state in
            defer { state.instance = nil }
            return state.instance
        }
        if let old {
            if mode == .crash {
                await Self.crash(old)
            } else {
                await Self.stopGracefully(old)
            }
        }
        return try await launch()
    }

    // MARK: Observation

    /// The running server instance, nil while none runs (it changes with every restart).
    public var server: LongLinkServer? {
        state.withLock { $0.instance?.server }
    }

    /// True while an instance runs.
    public var isRunning: Bool {
        state.withLock { $0.instance != nil }
    }

    /// How many instances have been started so far.
    public var instancesStarted: Int {
        state.withLock { $0.instancesStarted }
    }

    /// The address the servers listen on (the same for every instance). Throws `failedPrecondition` before the
    /// first ``start()``.
    public var localAddress: SocketAddress {
        get throws(LongLinkError) {
            guard let address = state.withLock({ $0.address }) else {
                throw LongLinkError(code: .failedPrecondition, message: "the test server has not been started")
            }
            return address
        }
    }

    /// The directory of the durable store the instances share when no `stores` closure was given (see
    /// ``init(configuration:loopCount:bindRetryTimeout:stores:router:)``); nil before the first start and with
    /// stores of the caller's.
    public var dataDirectory: String? {
        state.withLock { $0.dataDirectory }
    }

    /// ``localAddress`` as an endpoint to connect to.
    public var endpoint: Endpoint {
        get throws(LongLinkError) {
            Self.endpoint(of: try localAddress)
        }
    }

    // MARK: Internals

    private func reserve(requireRunning: Bool?) throws(LongLinkError) {
        let problem = state.withLock { state -> String? in
            if state.busy {
                return "another start, stop or restart of this test server is under way"
            }
            if requireRunning == false && state.instance != nil {
                return "the test server is already running"
            }
            state.busy = true
            return nil
        }
        if let problem {
            throw LongLinkError(code: .failedPrecondition, message: problem)
        }
    }

    private func release() {
        state.withLock { $0.busy = false }
    }

    private func take() -> Instance? {
        state.withLock { state in
            defer { state.instance = nil }
            return state.instance
        }
    }

    private func launch() async throws -> SocketAddress {
        var (fixed, reservation) = state.withLock { ($0.address, $0.reservation) }
        var configuration = configuration
        if fixed == nil, case .tcp(let host, 0) = configuration.endpoint, let reserved = try? ReservedPort(host: host) {
            // A port of the system's choice, kept for every later instance.
            reservation = reserved
            fixed = reserved.address
            state.withLock { $0.reservation = reserved }
        }
        if let fixed {
            configuration.endpoint = Self.endpoint(of: fixed)
        }
        configuration.reusesPort = reservation != nil
        let retries = fixed != nil || Self.hasFixedPort(configuration.endpoint)
        let deadline = ContinuousClock.now + bindRetryTimeout
        while true {
            do {
                let (instance, address) = try await startInstance(configuration)
                state.withLock { state in
                    state.instance = instance
                    state.address = state.address ?? address
                    state.instancesStarted += 1
                }
                return address
            } catch {
                guard retries, Self.isAddressInUse(error), ContinuousClock.now < deadline else {
                    throw error
                }
                // A back-off between bind attempts, not synchronisation.
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    private func startInstance(_ base: ServerConfiguration) async throws -> (Instance, SocketAddress) {
        var configuration = base
        if base.serverIDIsDefault {
            // Distinct per instance, so that a restart is visible to clients; counted from 1.
            configuration.serverID = "\(base.serverID)-\(state.withLock { $0.instancesStarted } + 1)"
        }
        let stores = try makeStores?() ?? ownStores()
        let group = EventLoopGroup(loopCount: loopCount, name: "test-server")
        configuration.eventLoopGroup = group
        let server = LongLinkServer(configuration: configuration, router: makeRouter(), stores: stores)
        let task = Task {
            try await server.run()
        }
        do {
            let address = try await server.localAddress
            return (Instance(server: server, group: group, task: task), address)
        } catch {
            server.shutdown()
            _ = await task.result
            await group.shutdownAndWait()
            throw error
        }
    }

    /// The harness's durable store, opened on its directory (made the first time). The previous instance's
    /// store is closed by then: its server closed it when its `run()` returned, crash or not.
    private func ownStores() throws -> ServerStores {
        let directory = try state.withLock { state throws -> String in
            if let directory = state.dataDirectory { return directory }
            let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
            let prefix = base.hasSuffix("/") ? base : base + "/"
            var template = Array((prefix + "longlink-test-server-XXXXXX").utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw LongLinkError(
                    code: .unavailable, message: "could not make a temporary directory in \(base) for the store")
            }
            let directory = String(cString: made)
            state.dataDirectory = directory
            return directory
        }
        var storeConfiguration = DurableStoreConfiguration(budgetsOf: configuration)
        // The harness simulates crashes of the process, never of the machine: every sync policy keeps all that
        // was committed across those, and skipping fsync keeps tests fast on shared disks.
        storeConfiguration.sync = .never
        return try .durable(directory: directory, configuration: storeConfiguration)
    }

    private static func stopGracefully(_ instance: Instance) async {
        instance.server.shutdown()
        _ = await instance.task.result
        await instance.group.shutdownAndWait()
    }

    private static func crash(_ instance: Instance) async {
        // `abort()` resets every connection without a GoAway and cancels the handlers, as a crash would.
        instance.server.abort()
        _ = await instance.task.result
        await instance.group.shutdownAndWait()
    }

    private static func endpoint(of address: SocketAddress) -> Endpoint {
        address.isUnixDomain ? .unix(path: address.host) : .tcp(host: address.host, port: address.port ?? 0)
    }

    private static func hasFixedPort(_ endpoint: Endpoint) -> Bool {
        switch endpoint {
        case .tcp(_, let port): port != 0
        case .unix: true
        }
    }

    private static func isAddressInUse(_ error: any Error) -> Bool {
        guard let error = error as? LongLinkError, let cause = error.underlying as? SystemCallError else {
            return false
        }
        return cause.errno == EADDRINUSE
    }
}

internal import LongLinkCore
internal import LongLinkTransport

/// Several named clients side by side ("quotes", "trade", "chat"), each with its own endpoints,
/// configuration, request queue and limits, run under one ``run()``; services can be added and
/// removed while it runs.
///
/// Each service is a ``LongLinkClient`` of its own: a flood of requests on one fills only that
/// service's queue, and a service that cannot connect keeps only its own callers waiting. Find a
/// service by name with ``client(_:)``, or give it a typed accessor:
///
/// ```swift
/// extension ServiceName {
///     static let quotes: ServiceName = "quotes"
/// }
/// extension LongLinkServices {
///     var quotes: LongLinkClient { get throws { try client(.quotes) } }
/// }
///
/// let reply = try await services.quotes.request("quotes.get", payload: body)
/// ```
///
/// ``add(_:configuration:)`` and ``remove(_:)`` change the set at any time, from any task; the
/// services that stay are not touched.
public final class LongLinkServices: Sendable {
    let table: Locked<ServiceTable>
    /// Rung when a service is added while ``run()`` runs; finished by ``shutdown(gracePeriod:)``.
    let doorbell: AsyncStream<Void>
    let ring: AsyncStream<Void>.Continuation

    /// One client per entry, configured as given.
    public init(_ services: [ServiceName: ClientConfiguration]) {
        table = Locked(ServiceTable(services.mapValues { LongLinkClient(configuration: $0) }))
        (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The services by name, as they are now.
    public var clients: [ServiceName: LongLinkClient] { table.withLock { $0.clients } }

    /// The service's names, sorted.
    public var names: [ServiceName] { clients.keys.sorted() }

    /// The client of the service, or `notFound` when no service has that name (never had, or was
    /// removed).
    public func client(_ name: ServiceName) throws(LongLinkError) -> LongLinkClient {
        guard let client = self[name] else {
            throw LongLinkError(code: .notFound, message: "no service named '\(name)'")
        }
        return client
    }

    /// The client of the service, if there is one.
    public subscript(name: ServiceName) -> LongLinkClient? { table.withLock { $0.services[name]?.client } }

    /// Moves a service to other endpoints at run time: its queued and in-flight requests finish or
    /// move, none is lost (see ``LongLinkClient/setEndpoints(_:)``).
    public func setEndpoints(_ endpoints: [Endpoint], for name: ServiceName) async throws(LongLinkError) {
        try await client(name).setEndpoints(endpoints)
    }

    /// Runs every service's supervisor, and those of services added meanwhile, until
    /// ``shutdown(gracePeriod:)`` or cancellation; then waits for every one of them to stop.
    ///
    /// The services are independent: one that stops with a terminal error (a rejected login, say)
    /// does not stop the others, nor `run()`. Once all have stopped, the first terminal error of a
    /// service still in the set (by name) is thrown, naming its service; a removed service's error
    /// is not. Throws ``LongLinkError/Code-swift.struct/failedPrecondition`` when called twice.
    public func run() async throws {
        guard table.withLock({ $0.start() }) else {
            throw LongLinkError(code: .failedPrecondition, message: "run() was already called on these services")
        }
        let table = self.table
        await withDiscardingTaskGroup { group in
            launch(table.withLock { $0.takeUnlaunched() }, in: &group)
            // Ends at shutdown, and when the task running `run()` is cancelled.
            for await _ in doorbell { launch(table.withLock { $0.takeUnlaunched() }, in: &group) }
            launch(table.withLock { $0.beginDraining() }, in: &group)
        }
        let failures = table.withLock { $0.end() }
        guard let (name, error) = failures.first else { return }
        if let error = error as? LongLinkError {
            throw LongLinkError(code: error.code, message: "service '\(name)': \(error.message)", underlying: error)
        }
        throw error
    }

    /// Runs each client in a child task; when its `run()` returns, the table records why and the
    /// removers waiting for it go on.
    private func launch(_ launches: [ServiceTable.Launch], in group: inout DiscardingTaskGroup) {
        let table = self.table
        for launch in launches {
            group.addTask {
                var failure: (any Error)?
                do {
                    try await launch.client.run()
                } catch {
                    failure = error
                }
                for waiter in table.withLock({ $0.finished(id: launch.id, error: failure) }) { waiter.resume() }
            }
        }
    }

    /// Shuts every service down gracefully (see ``LongLinkClient/shutdown(gracePeriod:)``), those
    /// being removed too; services can no longer be added
    /// (``LongLinkError/Code-swift.struct/shutdown``).
    public func shutdown(gracePeriod: Duration = .seconds(5)) {
        let clients = table.withLock { $0.requestShutdown() }
        ring.finish()
        for client in clients { client.shutdown(gracePeriod: gracePeriod) }
    }
}

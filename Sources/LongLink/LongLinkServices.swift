/// Several named clients side by side ("quotes", "trade", "chat"), each with its own endpoints,
/// configuration, request queue and limits, run under one ``run()``.
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
public final class LongLinkServices: Sendable {
    /// The services by name.
    public let clients: [ServiceName: LongLinkClient]

    /// One client per entry, configured as given.
    public init(_ services: [ServiceName: ClientConfiguration]) {
        clients = services.mapValues { LongLinkClient(configuration: $0) }
    }

    /// The service's names, sorted.
    public var names: [ServiceName] { clients.keys.sorted() }

    /// The client of the service, or `notFound` when no service has that name.
    public func client(_ name: ServiceName) throws(LongLinkError) -> LongLinkClient {
        guard let client = clients[name] else {
            throw LongLinkError(code: .notFound, message: "no service named '\(name)'")
        }
        return client
    }

    /// The client of the service, if there is one.
    public subscript(name: ServiceName) -> LongLinkClient? { clients[name] }

    /// Moves a service to other endpoints at run time: its queued and in-flight requests finish or
    /// move, none is lost (see ``LongLinkClient/setEndpoints(_:)``).
    public func setEndpoints(_ endpoints: [Endpoint], for name: ServiceName) async throws(LongLinkError) {
        try await client(name).setEndpoints(endpoints)
    }

    /// Runs every service's supervisor until ``shutdown(gracePeriod:)`` or cancellation. The
    /// services are independent: one that stops with a terminal error (a rejected login, say) does
    /// not stop the others. When all have stopped, the first terminal error is thrown, naming its
    /// service.
    public func run() async throws {
        let clients = self.clients
        let failures = await withTaskGroup(of: (ServiceName, (any Error)?).self) { group in
            for (name, client) in clients {
                group.addTask {
                    do {
                        try await client.run()
                        return (name, nil)
                    } catch {
                        return (name, error)
                    }
                }
            }
            var failures: [(ServiceName, any Error)] = []
            for await (name, error) in group {
                if let error { failures.append((name, error)) }
            }
            return failures.sorted { $0.0 < $1.0 }
        }
        guard let (name, error) = failures.first else { return }
        if let error = error as? LongLinkError {
            throw LongLinkError(code: error.code, message: "service '\(name)': \(error.message)", underlying: error)
        }
        throw error
    }

    /// Shuts every service down gracefully (see ``LongLinkClient/shutdown(gracePeriod:)``).
    public func shutdown(gracePeriod: Duration = .seconds(5)) {
        for client in clients.values { client.shutdown(gracePeriod: gracePeriod) }
    }
}

/// The name of a service of ``LongLinkServices``; a string literal works where one is expected.
public struct ServiceName: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name.
    public var rawValue: String

    /// A name.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// A name from a string literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    public var description: String { rawValue }

    public static func < (lhs: ServiceName, rhs: ServiceName) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Runs `services` for the duration of `body`, then shuts them down and waits for them: the scoped
/// form of ``LongLinkServices/run()``, as ``withLongLinkClient(configuration:isolation:_:)`` is of a
/// client's.
public func withLongLinkServices<Result: Sendable>(
    _ services: [ServiceName: ClientConfiguration],
    isolation: isolated (any Actor)? = #isolation,
    _ body: (LongLinkServices) async throws -> Result
) async throws -> Result {
    let services = LongLinkServices(services)
    return try await runScoped(run: { try await services.run() }, stop: { services.shutdown() }) {
        try await body(services)
    }
}

/// Runs `services` for the duration of `body`, then shuts them down and waits for them: the scoped
/// form of ``LongLinkServices/run()``, as ``withLongLinkClient(configuration:isolation:_:)`` is of a
/// client's. Services added in `body` with ``LongLinkServices/add(_:configuration:)`` run and shut
/// down with the others.
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

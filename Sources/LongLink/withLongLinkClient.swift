/// Runs a client's supervisor around `body` and shuts the client down gracefully when `body`
/// returns or throws.
///
/// ```swift
/// let room = try await withLongLinkClient(configuration: configuration) { client in
///     try await client.send(EnterRoom(room: 42, user: "alice"))
/// }
/// ```
///
/// Throws what `body` throws; when `body` succeeded but the supervisor stopped on a terminal error
/// (a rejected login, `GoAway` without reconnect), throws that error. With
/// ``ClientConfiguration/waitsForLoginAfterSessionEnd`` `body` may log in again after such an end
/// (``LongLinkClient/login(_:)``); the error is thrown only if the last session ended so.
public func withLongLinkClient<Result: Sendable>(
    configuration: ClientConfiguration,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (LongLinkClient) async throws -> Result
) async throws -> Result {
    let client = LongLinkClient(configuration: configuration)
    return try await runScoped(run: { try await client.run() }, stop: { client.shutdown() }) { try await body(client) }
}

/// Runs `run` in a child task around `body`, then `stop`s and waits for it: the shape of the
/// scoped `with…` functions. Throws what `body` throws, else what `run` threw.
func runScoped<Result: Sendable>(
    isolation: isolated (any Actor)? = #isolation,
    run: @escaping @Sendable () async throws -> Void, stop: () -> Void, _ body: () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
        group.addTask { try await run() }
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        stop()
        var runError: (any Error)?
        do {
            try await group.next()
        } catch {
            runError = error
        }
        switch result {
        case .success(let value):
            if let runError { throw runError }
            return value
        case .failure(let error):
            throw error
        }
    }
}

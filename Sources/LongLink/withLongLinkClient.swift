/// Runs a client's supervisor around `body` and shuts the client down gracefully when `body`
/// returns or throws.
///
/// ```swift
/// let room = try await withLongLinkClient(configuration: configuration) { client in
///     try await client.send(EnterRoom(id: 42))
/// }
/// ```
///
/// Throws what `body` throws; when `body` succeeded but the supervisor stopped on a terminal error
/// (a rejected login, `GoAway` without reconnect), throws that error.
public func withLongLinkClient<Result: Sendable>(
    configuration: ClientConfiguration,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (LongLinkClient) async throws -> Result
) async throws -> Result {
    let client = LongLinkClient(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
        group.addTask { try await client.run() }
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await body(client))
        } catch {
            result = .failure(error)
        }
        client.shutdown()
        var supervisorError: (any Error)?
        do {
            try await group.next()
        } catch {
            supervisorError = error
        }
        switch result {
        case .success(let value):
            if let supervisorError { throw supervisorError }
            return value
        case .failure(let error):
            throw error
        }
    }
}

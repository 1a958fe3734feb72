import LongLinkTransport

/// No port below the ephemeral range could be bound.
package struct NoFreePort: Error, CustomStringConvertible {
    package var description: String { "no free port below the ephemeral range" }
}

/// A port nothing listens on right now (bound once and released).
///
/// Below Linux's ephemeral range (32768 and up by default): a port the kernel hands out can be
/// taken meanwhile as the source port of another connection, even of a connection dialling it (a
/// TCP self-connect, which then succeeds): a server cannot bind it, and a "closed" port answers.
package func freePort() async throws -> Int {
    var random = SystemRandomNumberGenerator()
    for _ in 0..<50 {
        let port = Int.random(in: 20_000..<32_768, using: &random)
        guard
            let listener = try? await Listener.bind(
                to: .tcp(host: "127.0.0.1", port: port), onAccept: { connection in connection.close(.immediately) })
        else { continue }
        listener.close()
        return port
    }
    throw NoFreePort()
}

import LongLinkTransport

/// No port below the ephemeral range could be bound.
@_spi(Benchmarks)
public struct NoFreePort: Error, CustomStringConvertible {
    /// Says so in one line.
    public var description: String { "no free port below the ephemeral range" }
}

/// A loopback port nothing listens on right now (bound once and released), for a child process
/// (a `redis-server`) that must be told its port.
///
/// Another process can take the port before the child binds it: start the child in a loop that
/// tries another port when it cannot bind, and check that what answers is the child (its process
/// id). A server in the test's own process binds port 0 and reads its address back instead, or
/// binds beside a port the test holds (`ReservedPort` in LongLinkTransport).
///
/// Below Linux's ephemeral range (32768 and up by default): a port the kernel hands out can be
/// taken meanwhile as the source port of another connection, even of a connection dialling it (a
/// TCP self-connect, which then succeeds): a server cannot bind it, and a "closed" port answers.
@_spi(Benchmarks)
public func freePort() async throws -> Int {
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

import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("Load", .sharedMachine)
struct LoadTests {
    /// 2,000 connections open at once, each doing request/response: every one is answered.
    @Test func twoThousandConcurrentConnectionsAreAllAnswered() async throws {
        let connections = 2_000
        var configuration = ServerConfiguration.testing
        configuration.maxConnections = connections + 10
        try await withServer(configuration) { server, address in
            var clients: [FrameClient] = []
            // Connect in waves so the listen backlog never overflows (a dropped SYN costs a second).
            for wave in stride(from: 0, to: connections, by: 250) {
                try await withThrowingTaskGroup(of: FrameClient.self) { group in
                    for index in wave..<min(connections, wave + 250) {
                        group.addTask {
                            let client = try await FrameClient.connect(to: address)
                            _ = try await client.handshake(clientID: "load-\(index)")
                            return client
                        }
                    }
                    for try await client in group { clients.append(client) }
                }
            }
            #expect(server.statistics.openConnections == connections)
            let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        let reply = try await client.call("echo", bytes("n\(index)"), id: "r\(index)")
                        return reply.text == "n\(index)" && reply.requestID == "r\(index)"
                    }
                }
                var ok = 0
                for try await good in group where good { ok += 1 }
                return ok
            }
            #expect(answered == connections)
            for client in clients { client.close() }
            try await eventually("all connections are closed", within: .seconds(10)) {
                server.statistics.openConnections == 0
            }
        }
    }
}

import Foundation
import LongLinkTestSupport
import Testing

@Suite("longlink serve --metrics", .sharedMachine)
struct ServeMetricsTests {
    @Test func thePageCountsTheCallsMade() async throws {
        let (server, port) = try await ServeCommandTests.startServer([
            "--quiet", "--no-feed", "--metrics", "127.0.0.1:0",
        ])
        defer { server.terminate() }
        let lines = try await server.lines(atLeast: 2)
        let prefix = "metrics on http://127.0.0.1:"
        let line = try #require(lines.first { $0.hasPrefix(prefix) }, "\(lines)")
        let metricsPort = try #require(Int(line.dropFirst(prefix.count).prefix { $0.isNumber }))
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "metrics-cli")
        _ = try await client.call("echo", "a", id: "1")
        _ = try await client.call("fail", "NOT_FOUND:x", id: "2")
        let page = try httpGet(port: metricsPort, "/metrics")
        #expect(page.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(page.contains("longlink_server_requests_total{method=\"echo\",status=\"OK\"} 1\n"))
        #expect(page.contains("longlink_server_requests_total{method=\"fail\",status=\"NOT_FOUND\"} 1\n"))
        #expect(page.contains("longlink_server_open_connections 1\n"))
    }

    @Test func aBadAddressIsAUsageError() async throws {
        let result = try await ToolProcess.run(["serve", "--port", "0", "--metrics", "nowhere"])
        #expect(result.status == 2)
        #expect(result.standardError.contains("--metrics needs HOST:PORT"))
    }
}

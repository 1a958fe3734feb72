import LongLink
import LongLinkServer
import LongLinkTestSupport
import Testing

@Suite("Client metrics", .sharedMachine)
struct ClientMetricsTests {
    @Test func callsAreCountedByMethodAndStatusAndTheStatisticsReported() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let metrics = try PrometheusMetrics()
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.metrics = metrics
        try await withLongLinkClient(configuration: configuration) { client in
            _ = try await client.request("echo", payload: bytes("a"))
            _ = try await client.request("echo", payload: bytes("b"))
            _ = try? await client.request("fail", payload: bytes("no"))
            _ = try? await client.request("nope")
            await client.reportMetrics()
            let page = metrics.render()
            #expect(page.contains("longlink_client_requests_total{method=\"echo\",status=\"OK\"} 2\n"))
            #expect(page.contains("longlink_client_requests_total{method=\"fail\",status=\"NOT_FOUND\"} 1\n"))
            #expect(page.contains("longlink_client_requests_total{method=\"nope\",status=\"UNIMPLEMENTED\"} 1\n"))
            #expect(page.contains("longlink_client_request_duration_seconds_count{method=\"echo\"} 2\n"))
            #expect(page.contains("longlink_client_requests_in_flight 0\n"))
            #expect(page.contains("longlink_client_connects_total 1\n"))
            #expect(page.contains("longlink_client_replies_received_total 4\n"))
        }
        try await server.stop()
    }

    @Test func anIntervalThatIsNotPositiveIsRefused() {
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: 1)])
        configuration.metricsInterval = .zero
        #expect(throws: LongLinkError.self) { try configuration.validate() }
    }
}

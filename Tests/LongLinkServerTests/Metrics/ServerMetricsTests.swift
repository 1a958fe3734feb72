import Foundation
import LongLinkCLISupport
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("Server metrics", .sharedMachine, .timeLimit(.minutes(3)))
struct ServerMetricsTests {
    private func configuration(_ metrics: PrometheusMetrics) -> ServerConfiguration {
        var configuration = ServerConfiguration.testing
        configuration.metrics = metrics
        return configuration
    }

    @Test func handlersAreCountedByMethodAndStatusAndTimed() async throws {
        let metrics = try PrometheusMetrics()
        try await withServer(configuration(metrics)) { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "metrics")
            _ = try await client.call("echo", bytes("a"), id: "1")
            _ = try await client.call("echo.sync", bytes("b"), id: "2")
            _ = try await client.call("echo.sync", bytes("c"), id: "3")
            _ = try await client.call("fail", bytes("5:gone"), id: "4")
            _ = try await client.call("crash", id: "5")
            // A method nobody registered gets no series of its own: clients cannot make up labels.
            let unknown = try await client.call("made.up.\(UUID())", id: "6")
            #expect(unknown.status?.code == .unimplemented)
            let page = metrics.render()
            #expect(page.contains("longlink_server_requests_total{method=\"echo\",status=\"OK\"} 1\n"))
            #expect(page.contains("longlink_server_requests_total{method=\"echo.sync\",status=\"OK\"} 2\n"))
            #expect(page.contains("longlink_server_requests_total{method=\"fail\",status=\"NOT_FOUND\"} 1\n"))
            #expect(page.contains("longlink_server_requests_total{method=\"crash\",status=\"INTERNAL\"} 1\n"))
            #expect(page.contains("longlink_server_request_duration_seconds_count{method=\"echo.sync\"} 2\n"))
            #expect(!page.contains("made.up"))
            #expect(page.contains("# HELP longlink_server_requests_total "))
        }
    }

    @Test func statisticsReachTheSinkAsCountersThatOnlyGrow() async throws {
        let metrics = try PrometheusMetrics()
        try await withServer(configuration(metrics)) { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "stats")
            for id in 1...3 { _ = try await client.call("echo", bytes("x"), id: "\(id)") }
            // The same id again: replayed from the window.
            _ = try await client.call("echo", bytes("x"), id: "1")
            server.reportMetrics()
            let received = server.statistics.requestsReceived
            var page = metrics.render()
            #expect(page.contains("longlink_server_requests_received_total \(received)\n"))
            #expect(page.contains("longlink_server_requests_replayed_total 1\n"))
            #expect(page.contains("longlink_server_open_connections 1\n"))
            // Reported again without change: the counters do not count twice.
            server.reportMetrics()
            page = metrics.render()
            #expect(page.contains("longlink_server_requests_received_total \(received)\n"))
        }
    }

    @Test func theEndpointServesThePageAndRefusesTheRest() async throws {
        let metrics = try PrometheusMetrics()
        try await withServer(configuration(metrics)) { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "page")
            _ = try await client.call("echo", bytes("a"), id: "1")
            let endpoint = try await MetricsEndpoint.start(on: .tcp(host: "127.0.0.1", port: 0)) {
                server.reportMetrics()
                return metrics.render()
            }
            let port = try #require(endpoint.localAddress.port)
            let page = try httpGet(port: port, "/metrics")
            #expect(page.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(page.contains("Content-Type: text/plain; version=0.0.4"))
            #expect(page.contains("longlink_server_requests_total{method=\"echo\",status=\"OK\"} 1\n"))
            #expect(try httpGet(port: port, "/nothing").hasPrefix("HTTP/1.1 404"))
            #expect(
                try httpExchange(port: port, "DELETE /metrics HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 405"))
            let garbage = String(repeating: "x", count: 20_000)
            #expect(try httpExchange(port: port, garbage).hasPrefix("HTTP/1.1 431"))
            await endpoint.close()
        }
    }

    @Test(.enabled(if: Prometheus.testsEnabled))
    func promtoolAcceptsThePage() async throws {
        let promtool = try Prometheus.binary("promtool")
        let metrics = try PrometheusMetrics()
        try await withServer(configuration(metrics)) { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "lint")
            _ = try await client.call("echo", bytes("a"), id: "1")
            _ = try await client.call("fail", bytes("3:bad"), id: "2")
            server.reportMetrics()
            let directory = try TemporaryDirectory("metrics")
            let file = directory.appending("page.txt")
            try metrics.render().write(toFile: file, atomically: true, encoding: .utf8)
            let result = try await Subprocess.run(
                ["sh", "-c", "\(promtool) check metrics < \(file)"], timeout: .seconds(60))
            print("promtool check metrics: status \(result.status)\n\(result.output)\(result.errorOutput)")
            #expect(result.status == 0, "\(result.errorOutput)")
        }
    }

    @Test(.enabled(if: Prometheus.testsEnabled))
    func aRealPrometheusScrapesIt() async throws {
        let binary = try Prometheus.binary("prometheus")
        let metrics = try PrometheusMetrics()
        try await withServer(configuration(metrics)) { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "scraped")
            for id in 1...3 { _ = try await client.call("echo", bytes("a"), id: "\(id)") }
            let endpoint = try await MetricsEndpoint.start(on: .tcp(host: "127.0.0.1", port: 0)) {
                server.reportMetrics()
                return metrics.render()
            }
            defer { Task { await endpoint.close() } }
            let port = try #require(endpoint.localAddress.port)
            let directory = try TemporaryDirectory("prometheus")
            let config = directory.appending("prometheus.yml")
            try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: longlink
                static_configs:
                  - targets: ['127.0.0.1:\(port)']
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let webPort = try await freePort()
            let process = try ChildProcess(
                binary,
                arguments: [
                    "--config.file=\(config)", "--storage.tsdb.path=\(directory.appending("data"))",
                    "--web.listen-address=127.0.0.1:\(webPort)",
                ], standardInput: .nullDevice, standardOutput: .file(directory.appending("out.log")),
                standardError: .file(directory.appending("err.log")))
            defer {
                process.terminate()
                if process.waitUntilExit(within: .seconds(10)) == nil { process.kill() }
            }
            let query = "/api/v1/query?query=longlink_server_requests_total%7Bmethod%3D%22echo%22%7D"
            // Prometheus starts, scrapes every second, and answers the query once it has a sample.
            var answer = ""
            let deadline = ContinuousClock.now.advanced(by: .seconds(90))
            while !answer.contains("\"method\":\"echo\"") {
                try #require(process.isRunning, "prometheus exited: see \(directory.appending("err.log"))")
                try #require(ContinuousClock.now < deadline, "Prometheus never had a sample of the page")
                try await Task.sleep(for: .milliseconds(250))
                answer = (try? httpGet(port: webPort, query, timeoutSeconds: 5)) ?? ""
            }
            print("prometheus query answered: \(answer.split(separator: "\r\n\r\n").last ?? "")")
            #expect(answer.contains("\"status\":\"success\""))
            #expect(answer.contains("\"3\"]"))
        }
    }
}

/// Debian's `prometheus` package (promtool and the server), installed by `.ci/run`.
enum Prometheus {
    static func path(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let testsEnabled: Bool = {
        if path("promtool") != nil || ProcessInfo.processInfo.environment["CI"] != nil { return true }
        print("LongLinkServerTests: promtool not found (Debian package prometheus); the Prometheus tests are skipped")
        return false
    }()

    struct Missing: Error, CustomStringConvertible {
        var name: String
        var description: String { "\(name) not found and CI is set: install the Debian package prometheus" }
    }

    static func binary(_ name: String) throws -> String {
        guard let path = path(name) else { throw Missing(name: name) }
        return path
    }
}

import LongLinkTestSupport
import Testing

@testable import LongLinkServer

@Suite("Prometheus metrics", .sharedMachine)
struct PrometheusMetricsTests {
    @Test func countersGaugesAndHistogramsRenderInTheTextFormat() throws {
        let metrics = try PrometheusMetrics(buckets: [.milliseconds(1), .milliseconds(10)])
        metrics.describe(label: "calls_total", help: "Calls\nmade \\ so far.")
        let counter = metrics.makeCounter(label: "calls_total", dimensions: [("status", "OK"), ("method", "a\"b")])
        counter.increment(by: 2)
        counter.increment(by: 3)
        counter.increment(by: -7)  // ignored: counters only go up
        metrics.makeGauge(label: "open", dimensions: []).record(4.5)
        let timer = metrics.makeTimer(label: "took_seconds", dimensions: [("method", "x")])
        timer.record(.microseconds(500))
        timer.record(.milliseconds(5))
        timer.record(.seconds(3))
        #expect(
            metrics.render() == """
                # HELP calls_total Calls\\nmade \\\\ so far.
                # TYPE calls_total counter
                calls_total{method="a\\"b",status="OK"} 5
                # TYPE open gauge
                open 4.5
                # TYPE took_seconds histogram
                took_seconds_bucket{method="x",le="0.001"} 1
                took_seconds_bucket{method="x",le="0.01"} 2
                took_seconds_bucket{method="x",le="+Inf"} 3
                took_seconds_sum{method="x"} 3.0055
                took_seconds_count{method="x"} 3

                """)
    }

    @Test func theSameLabelsGiveTheSameSeries() throws {
        let metrics = try PrometheusMetrics()
        metrics.makeCounter(label: "a", dimensions: [("x", "1"), ("y", "2")]).increment(by: 1)
        metrics.makeCounter(label: "a", dimensions: [("y", "2"), ("x", "1")]).increment(by: 1)
        #expect(metrics.seriesCount == 1)
        #expect(metrics.render().contains("a{x=\"1\",y=\"2\"} 2\n"))
    }

    @Test func seriesAreBoundedAndANameKeepsItsType() throws {
        let metrics = try PrometheusMetrics(maxSeries: 2)
        metrics.makeCounter(label: "a", dimensions: [("n", "1")]).increment(by: 1)
        // A second type under a name Prometheus would reject: refused, records nothing.
        metrics.makeGauge(label: "a", dimensions: [("n", "2")]).record(9)
        metrics.makeCounter(label: "a", dimensions: [("n", "2")]).increment(by: 1)
        for value in 3...100 {
            metrics.makeCounter(label: "a", dimensions: [("n", "\(value)")]).increment(by: 1)
        }
        #expect(metrics.seriesCount == 2)
        #expect(metrics.seriesRefused == 99)
        #expect(!metrics.render().contains("n=\"3\""))
    }

    @Test func namesAreMadeValid() throws {
        let metrics = try PrometheusMetrics()
        metrics.makeCounter(label: "9 bad-name", dimensions: [("a.b", "v")]).increment(by: 1)
        #expect(metrics.render().contains("_9_bad_name{a_b=\"v\"} 1\n"))
    }

    @Test func invalidSettingsAreTypedErrors() {
        #expect(throws: LongLinkError.self) { try PrometheusMetrics(maxSeries: 0) }
        #expect(throws: LongLinkError.self) { try PrometheusMetrics(buckets: []) }
        #expect(throws: LongLinkError.self) { try PrometheusMetrics(buckets: [.seconds(2), .seconds(1)]) }
    }
}

@Suite("The metrics page's HTTP exchange", .sharedMachine)
struct MetricsHTTPExchangeTests {
    private func outcome(_ text: String) -> MetricsHTTPExchange.Outcome {
        var exchange = MetricsHTTPExchange()
        return exchange.received(Array(text.utf8))
    }

    @Test func aGetOfTheMetricsPathGetsThePage() {
        #expect(outcome("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == .page(includeBody: true))
        #expect(outcome("GET /metrics?x=1 HTTP/1.0\r\n\r\n") == .page(includeBody: true))
        #expect(outcome("HEAD / HTTP/1.1\r\n\r\n") == .page(includeBody: false))
        let response = String(
            decoding: MetricsHTTPExchange.response(to: .page(includeBody: true), body: "a 1\n"), as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("Content-Length: 4\r\n"))
        #expect(response.hasSuffix("\r\n\r\na 1\n"))
    }

    @Test func aHeadInPiecesWaitsForItsEnd() {
        var exchange = MetricsHTTPExchange()
        #expect(exchange.received(Array("GET /metrics HTTP/1.1\r\n".utf8)) == .incomplete)
        #expect(exchange.received(Array("\r".utf8)) == .incomplete)
        #expect(exchange.received(Array("\n".utf8)) == .page(includeBody: true))
    }

    @Test func anythingElseIsRefused() {
        #expect(outcome("POST /metrics HTTP/1.1\r\n\r\n") == .refuse(status: "405 Method Not Allowed"))
        #expect(outcome("GET /other HTTP/1.1\r\n\r\n") == .refuse(status: "404 Not Found"))
        #expect(outcome("GET /metrics\r\n\r\n") == .refuse(status: "400 Bad Request"))
        #expect(outcome("\u{0}\u{1}\r\n\r\n") == .refuse(status: "400 Bad Request"))
        var exchange = MetricsHTTPExchange()
        var last = MetricsHTTPExchange.Outcome.incomplete
        for _ in 0..<100 where last == .incomplete {
            last = exchange.received([UInt8](repeating: UInt8(ascii: "a"), count: 1_000))
        }
        #expect(last == .refuse(status: "431 Request Header Fields Too Large"))
    }
}

import LongLinkCLISupport
import LongLinkServer

extension ServeCommand {
    /// `--metrics HOST:PORT`: where to serve the metrics page, and the sink the server reports to;
    /// nil without the option.
    static func metrics(_ arguments: ParsedArguments) throws(UsageError) -> (endpoint: Endpoint, sink: PrometheusMetrics)? {
        guard let text = arguments.value("metrics") else { return nil }
        guard let endpoint = Endpoint(parsing: text), case .tcp = endpoint else {
            throw UsageError("--metrics needs HOST:PORT or [IPv6]:PORT, not '\(text)'")
        }
        do {
            return (endpoint, try PrometheusMetrics())
        } catch {
            throw UsageError(error.message)
        }
    }

    /// Serves `sink`'s page for `server` on `endpoint` and prints where; nil when it cannot bind
    /// (said on standard error).
    static func serveMetrics(
        of server: LongLinkServer, sink: PrometheusMetrics, on endpoint: Endpoint
    ) async -> MetricsEndpoint? {
        do {
            let page = try await MetricsEndpoint.start(on: endpoint) {
                server.reportMetrics()
                return sink.render()
            }
            Terminal.standardOutput.line("metrics on http://\(page.localAddress)/metrics")
            return page
        } catch {
            Terminal.standardError.line("longlink serve: cannot serve metrics on \(endpoint): \(error.message)")
            return nil
        }
    }
}

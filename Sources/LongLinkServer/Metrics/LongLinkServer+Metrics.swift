internal import LongLinkCore
internal import LongLinkTransport

extension LongLinkServer {
    /// Reports the ``statistics`` to ``ServerConfiguration/metrics`` now (a page about to be
    /// scraped calls it first); does nothing without a sink. The server also reports every
    /// ``ServerConfiguration/metricsInterval`` while it runs.
    public func reportMetrics() {
        guard let reporter = core.metricsReporter else { return }
        reporter.report(statistics.metricSamples)
    }

    /// Reports the statistics every ``ServerConfiguration/metricsInterval`` until cancelled; nil
    /// without a sink.
    func startReportingMetrics() -> Task<Void, Never>? {
        guard core.metricsReporter != nil, let loop = core.loops.first else { return nil }
        let interval = configuration.metricsInterval
        let clock = core.clock
        return Task { [self] in
            while !Task.isCancelled {
                reportMetrics()
                do {
                    try await clock.sleep(until: clock.now.advanced(by: interval), on: loop)
                } catch {
                    return
                }
            }
        }
    }
}

internal import LongLinkCore

extension LongLinkClient {
    /// Reports the ``statistics`` to ``ClientConfiguration/metrics`` now; does nothing without a
    /// sink. The client also reports every ``ClientConfiguration/metricsInterval`` while
    /// ``run()`` runs.
    public func reportMetrics() async {
        guard let reporter = metrics?.reporter else { return }
        reporter.report(await statistics.metricSamples)
    }

    /// Reports the statistics every ``ClientConfiguration/metricsInterval`` until cancelled; nil
    /// without a sink.
    func startReportingMetrics() -> Task<Void, Never>? {
        guard metrics != nil else { return nil }
        let interval = configuration.metricsInterval
        let clock = core.clock
        let loop = core.loop
        return Task { [self] in
            while !Task.isCancelled {
                await reportMetrics()
                do {
                    try await clock.sleep(until: clock.now.advanced(by: interval), on: loop)
                } catch {
                    return
                }
            }
        }
    }
}

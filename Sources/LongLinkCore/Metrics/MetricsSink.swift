/// Where LongLink's clients and servers report their metrics: counters, gauges and timers by label
/// and dimensions, in the shape of swift-metrics' `MetricsFactory`.
///
/// LongLink asks for each handle once per label and dimensions and keeps it, so a sink's `make…`
/// methods are off the hot path; the handles' methods are called from any thread. Labels are
/// Prometheus-style names (`longlink_server_requests_total`); dimensions are label pairs whose
/// values come from a bounded set (registered methods, status codes), never from client input.
///
/// ``PrometheusMetrics`` is the sink LongLink ships; an app that uses swift-metrics forwards to
/// its `MetricsSystem.factory` in a few lines (see the Metrics article).
public protocol MetricsSink: Sendable {
    /// A counter that only goes up.
    func makeCounter(label: String, dimensions: [(String, String)]) -> any MetricsCounter
    /// A gauge: the last value recorded.
    func makeGauge(label: String, dimensions: [(String, String)]) -> any MetricsGauge
    /// A timer: a distribution of durations.
    func makeTimer(label: String, dimensions: [(String, String)]) -> any MetricsTimer
    /// What the metric `label` measures, said once before its first handle is made (a page's
    /// `# HELP` line). The default ignores it.
    func describe(label: String, help: String)
}

extension MetricsSink {
    /// Ignores the description.
    public func describe(label: String, help: String) {}
}

/// A counter handle of a ``MetricsSink``.
public protocol MetricsCounter: AnyObject, Sendable {
    /// Adds `amount` (not negative) to the counter.
    func increment(by amount: Int64)
}

/// A gauge handle of a ``MetricsSink``.
public protocol MetricsGauge: AnyObject, Sendable {
    /// Sets the gauge to `value`.
    func record(_ value: Double)
}

/// A timer handle of a ``MetricsSink``.
public protocol MetricsTimer: AnyObject, Sendable {
    /// Records one duration, in nanoseconds.
    func recordNanoseconds(_ duration: Int64)
}

extension MetricsTimer {
    /// Records one duration.
    public func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
    }
}

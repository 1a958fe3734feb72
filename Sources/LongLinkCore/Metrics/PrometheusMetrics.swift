import Synchronization

/// A ``MetricsSink`` that keeps every series in memory and renders them in Prometheus's text
/// exposition format (version 0.0.4), for a `/metrics` page.
///
/// Counters are counters, gauges are gauges, and timers are histograms in seconds with
/// ``buckets`` as their upper bounds. The number of series is bounded (``maxSeries``): past it, or
/// when a name is asked for as a second type, the handle given back records nothing and
/// ``seriesRefused`` counts it.
///
/// ```swift
/// let metrics = PrometheusMetrics()
/// var configuration = ServerConfiguration()
/// configuration.metrics = metrics
/// // serve metrics.render() at /metrics
/// ```
public final class PrometheusMetrics: MetricsSink {
    /// The timers' default bucket bounds: 100 µs to 10 s.
    public static let defaultBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2_500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10),
    ]

    /// The most series (one label set of one name; a histogram is one) kept.
    public let maxSeries: Int
    /// The timers' bucket bounds, ascending.
    public let buckets: [Duration]

    private let registry: Locked<Registry>

    /// A sink keeping at most `maxSeries` series, with timers bucketed by `buckets`.
    /// - Throws: `invalidConfiguration` when `maxSeries` is below 1 or `buckets` is empty or not
    ///   strictly ascending and positive.
    public init(maxSeries: Int = 10_000, buckets: [Duration] = PrometheusMetrics.defaultBuckets)
        throws(LongLinkError)
    {
        guard maxSeries >= 1 else {
            throw LongLinkError(code: .invalidConfiguration, message: "maxSeries must be at least 1")
        }
        guard let first = buckets.first, first > .zero, zip(buckets, buckets.dropFirst()).allSatisfy({ $0 < $1 })
        else {
            throw LongLinkError(
                code: .invalidConfiguration, message: "buckets must be positive and strictly ascending")
        }
        self.maxSeries = maxSeries
        self.buckets = buckets
        self.registry = Locked(Registry())
    }

    /// The handles asked for and refused: past ``maxSeries``, or a name already of another type.
    public var seriesRefused: Int { registry.withLock { $0.refused } }

    /// The number of series kept.
    public var seriesCount: Int { registry.withLock { $0.count } }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any MetricsCounter {
        handle(.counter, label: label, dimensions: dimensions) { PrometheusCounter() } as? any MetricsCounter
            ?? NoMetric()
    }

    public func makeGauge(label: String, dimensions: [(String, String)]) -> any MetricsGauge {
        handle(.gauge, label: label, dimensions: dimensions) { PrometheusGauge() } as? any MetricsGauge ?? NoMetric()
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any MetricsTimer {
        let bounds = buckets.map { $0.nanoseconds }
        return handle(.histogram, label: label, dimensions: dimensions) { PrometheusHistogram(bounds: bounds) }
            as? any MetricsTimer ?? NoMetric()
    }

    /// Keeps `help` as the `# HELP` text of `label` (at most ``maxSeries`` texts; later ones for
    /// new labels are dropped).
    public func describe(label: String, help: String) {
        let name = Self.metricName(label)
        registry.withLock { registry in
            guard registry.help[name] != nil || registry.help.count < maxSeries else { return }
            registry.help[name] = help
        }
    }

    /// Every series in Prometheus's text format, names and label sets in a stable order.
    public func render() -> String {
        let (families, help) = registry.withLock { ($0.families, $0.help) }
        var text = ""
        for name in families.keys.sorted() {
            let family = families[name]!
            if let help = help[name] {
                text += "# HELP \(name) \(help.replacing("\\", with: "\\\\").replacing("\n", with: "\\n"))\n"
            }
            text += "# TYPE \(name) \(family.kind.rawValue)\n"
            for labels in family.series.keys.sorted() {
                family.series[labels]!.render(name: name, labels: labels, buckets: buckets, into: &text)
            }
        }
        return text
    }

    private func handle(
        _ kind: Kind, label: String, dimensions: [(String, String)], make: () -> any PrometheusSeries
    ) -> AnyObject {
        let name = Self.metricName(label)
        let labels = Self.labelText(dimensions)
        return registry.withLock { registry -> AnyObject in
            if let family = registry.families[name] {
                guard family.kind == kind else {
                    registry.refused += 1
                    return NoMetric()
                }
                if let existing = family.series[labels] { return existing }
            }
            guard registry.count < maxSeries else {
                registry.refused += 1
                return NoMetric()
            }
            let series = make()
            registry.families[name, default: Family(kind: kind)].series[labels] = series
            registry.count += 1
            return series
        }
    }

    enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    struct Family {
        var kind: Kind
        var series: [String: any PrometheusSeries] = [:]
    }

    struct Registry {
        var families: [String: Family] = [:]
        var help: [String: String] = [:]
        var count = 0
        var refused = 0
    }
}

/// A handle that records nothing: what a refused series gets.
final class NoMetric: MetricsCounter, MetricsGauge, MetricsTimer {
    func increment(by amount: Int64) {}
    func record(_ value: Double) {}
    func recordNanoseconds(_ duration: Int64) {}
}

extension Duration {
    /// The whole nanoseconds of this duration.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}

import Synchronization

/// One figure of a statistics snapshot, as a metric.
package struct MetricSample: Sendable {
    /// A counter's running total (the reporter sends the sink what it gained), or a gauge's value.
    package enum Kind: Sendable {
        case counter
        case gauge
    }

    package var label: String
    package var kind: Kind
    package var value: Int
    /// What it measures (``MetricsSink/describe(label:help:)``).
    package var help: String

    package init(_ label: String, _ kind: Kind, _ value: Int, _ help: String) {
        self.label = label
        self.kind = kind
        self.value = value
        self.help = help
    }
}

/// Feeds snapshots of running totals to a ``MetricsSink``: a counter gets what it gained since
/// the last report, a gauge its value. Clients and servers count in their own atomics (cheap on
/// the hot path); this turns those snapshots into the sink's shape when asked.
package final class MetricsReporter: Sendable {
    package let sink: any MetricsSink
    private let state = Locked(State())

    private struct State {
        var counters: [String: (handle: any MetricsCounter, last: Int)] = [:]
        var gauges: [String: any MetricsGauge] = [:]
    }

    package init(sink: any MetricsSink) {
        self.sink = sink
    }

    /// Reports `samples`; a counter whose total went down (a restart of what counts it) reports
    /// its new total.
    package func report(_ samples: [MetricSample]) {
        state.withLock { state in
            for sample in samples {
                switch sample.kind {
                case .counter:
                    let entry =
                        state.counters[sample.label]
                        ?? {
                            sink.describe(label: sample.label, help: sample.help)
                            return (sink.makeCounter(label: sample.label, dimensions: []), 0)
                        }()
                    let gained = sample.value >= entry.last ? sample.value - entry.last : sample.value
                    if gained > 0 { entry.handle.increment(by: Int64(gained)) }
                    state.counters[sample.label] = (entry.handle, sample.value)
                case .gauge:
                    let gauge =
                        state.gauges[sample.label]
                        ?? {
                            sink.describe(label: sample.label, help: sample.help)
                            return sink.makeGauge(label: sample.label, dimensions: [])
                        }()
                    gauge.record(Double(sample.value))
                    state.gauges[sample.label] = gauge
                }
            }
        }
    }
}

import Synchronization

/// One series of ``PrometheusMetrics``: its value and how it is written out.
protocol PrometheusSeries: AnyObject, Sendable {
    func render(name: String, labels: String, buckets: [Duration], into text: inout String)
}

final class PrometheusCounter: MetricsCounter, PrometheusSeries {
    private let value = Atomic<Int64>(0)

    func increment(by amount: Int64) {
        // A counter never goes down: a negative amount is a caller's bug, ignored.
        guard amount > 0 else { return }
        value.add(amount, ordering: .relaxed)
    }

    func render(name: String, labels: String, buckets: [Duration], into text: inout String) {
        text += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(value.load(ordering: .relaxed))\n"
    }
}

final class PrometheusGauge: MetricsGauge, PrometheusSeries {
    private let bits = Atomic<UInt64>(0)

    func record(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
    }

    func render(name: String, labels: String, buckets: [Duration], into text: inout String) {
        let value = Double(bitPattern: bits.load(ordering: .relaxed))
        text += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(PrometheusMetrics.number(value))\n"
    }
}

final class PrometheusHistogram: MetricsTimer, PrometheusSeries {
    private let bounds: [Int64]
    private let state: Locked<State>

    struct State {
        var counts: [Int64]
        var sum: Int64 = 0
        var count: Int64 = 0
    }

    init(bounds: [Int64]) {
        self.bounds = bounds
        self.state = Locked(State(counts: Array(repeating: 0, count: bounds.count)))
    }

    func recordNanoseconds(_ duration: Int64) {
        let duration = max(0, duration)
        // The first bucket whose bound holds it; past the last, only +Inf (the count) holds it.
        var low = 0
        var high = bounds.count
        while low < high {
            let middle = (low + high) / 2
            if bounds[middle] < duration { low = middle + 1 } else { high = middle }
        }
        state.withLock { state in
            if low < state.counts.count { state.counts[low] += 1 }
            state.sum &+= duration
            state.count += 1
        }
    }

    func render(name: String, labels: String, buckets: [Duration], into text: inout String) {
        let state = state.withLock { $0 }
        let prefix = labels.isEmpty ? "" : labels + ","
        var cumulative: Int64 = 0
        for (index, bound) in buckets.enumerated() {
            cumulative += state.counts[index]
            let le = PrometheusMetrics.number(Double(bound.nanoseconds) / 1e9)
            text += "\(name)_bucket{\(prefix)le=\"\(le)\"} \(cumulative)\n"
        }
        text += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(state.count)\n"
        let braces = labels.isEmpty ? "" : "{\(labels)}"
        text += "\(name)_sum\(braces) \(PrometheusMetrics.number(Double(state.sum) / 1e9))\n"
        text += "\(name)_count\(braces) \(state.count)\n"
    }
}

extension PrometheusMetrics {
    /// `label` as a metric name: characters outside `[a-zA-Z0-9_:]` become `_`, and a leading digit
    /// gets a `_` before it.
    static func metricName(_ label: String) -> String {
        var name = String(
            String.UnicodeScalarView(
                label.unicodeScalars.map { scalar in
                    scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                        || scalar == "_" || scalar == ":") ? scalar : "_"
                }))
        if name.isEmpty || name.first!.isNumber { name = "_" + name }
        return name
    }

    /// The dimensions as a label set's text, by name (names sanitised as metric names without `:`,
    /// values escaped).
    static func labelText(_ dimensions: [(String, String)]) -> String {
        dimensions
            .map { (metricName($0.0).replacing(":", with: "_"), $0.1) }
            .sorted { $0.0 < $1.0 }
            .map { "\($0.0)=\"\(escaped($0.1))\"" }
            .joined(separator: ",")
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escaped(_ value: String) -> String {
        var text = ""
        for character in value {
            switch character {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case "\n": text += "\\n"
            default: text.append(character)
            }
        }
        return text
    }

    /// A sample value as Prometheus reads it (`+Inf`, `-Inf`, `NaN`, integers without a fraction).
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

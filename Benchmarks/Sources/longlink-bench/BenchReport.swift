import BenchCLISupport
import Foundation
import LongLinkWire

/// What a figure must reach: a bound on its value or on its ratio to the baseline.
struct BenchTarget: Sendable {
    private enum Bound: Sendable {
        case atLeast(Double)
        case atMost(Double)
        case ratioAtLeast(Double)
        case ratioAtMost(Double)
    }

    private let bounds: [Bound]
    /// For people: `>= 50% of baseline`.
    let text: String

    private init(_ bounds: [Bound], _ text: String) {
        self.bounds = bounds
        self.text = text
    }

    static func atLeast(_ value: Double, _ text: String) -> BenchTarget { BenchTarget([.atLeast(value)], text) }
    static func atMost(_ value: Double, _ text: String) -> BenchTarget { BenchTarget([.atMost(value)], text) }
    static func ratioAtLeast(_ ratio: Double, _ text: String) -> BenchTarget {
        BenchTarget([.ratioAtLeast(ratio)], text)
    }
    static func ratioAtMost(_ ratio: Double, _ text: String) -> BenchTarget { BenchTarget([.ratioAtMost(ratio)], text) }

    /// Both bounds must hold.
    static func all(_ first: BenchTarget, _ second: BenchTarget) -> BenchTarget {
        BenchTarget(first.bounds + second.bounds, first.text + " and " + second.text)
    }

    /// Whether `value` (with `ratio` to the baseline, if any) meets every bound; nil when a ratio
    /// bound has no ratio to check.
    func isMet(value: Double, ratio: Double?) -> Bool? {
        for bound in bounds {
            switch bound {
            case .atLeast(let limit): if value < limit { return false }
            case .atMost(let limit): if value > limit { return false }
            case .ratioAtLeast(let limit):
                guard let ratio else { return nil }
                if ratio < limit { return false }
            case .ratioAtMost(let limit):
                guard let ratio else { return nil }
                if ratio > limit { return false }
            }
        }
        return true
    }
}

/// One figure of the report: the samples of every run, the median, the baseline measured in the
/// same run (for throughput and latency rows) and the target.
struct BenchFigure: Sendable {
    /// Stable machine-readable name: `rpc.in_flight_64.throughput`.
    var key: String
    /// For people: `rpc, 64 in flight`.
    var label: String
    /// `req/s`, `msg/s`, `µs`, `ms`, `B`, `intervals`, `connections`.
    var unit: String
    /// One value per run.
    var samples: [Double]
    /// The baseline's samples (one per run), when the row has a baseline.
    var baselineSamples: [Double]? = nil
    var target: BenchTarget? = nil
    /// Anything a reader needs to interpret the row.
    var note: String? = nil

    var value: Double { BenchStats.median(samples) }
    var baseline: Double? { baselineSamples.map(BenchStats.median) }

    /// Median of LongLink / median of the baseline.
    var ratio: Double? {
        guard let baseline, baseline != 0 else { return nil }
        return value / baseline
    }

    var met: Bool? { target?.isMet(value: value, ratio: ratio) }
}

/// Medians and percentiles.
enum BenchStats {
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The nearest-rank percentile (`fraction` 0.99 for p99) of `sorted`, which must be sorted.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }
}

/// The machine and its load, for the report's header.
struct BenchMachine: Sendable {
    var cores: Int
    var kernel: String
    var cpuModel: String
    var swiftRuntime: String

    static func current() -> BenchMachine {
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        return BenchMachine(
            cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), kernel: release, cpuModel: model,
            swiftRuntime: "Swift 6 (release build: \(BenchMachine.isReleaseBuild ? "yes" : "no"))")
    }

    static var isReleaseBuild: Bool {
        #if DEBUG
            false
        #else
            true
        #endif
    }

    /// The 1, 5 and 15 minute load averages from /proc/loadavg.
    static func loadAverage() -> [Double] {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return [] }
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }
}

/// Collects the figures of a run and prints them as a table or as JSON.
struct BenchReport: Sendable {
    var command: String
    var runs: Int
    var duration: Double
    var figures: [BenchFigure] = []
    var notes: [String] = []
    let machine = BenchMachine.current()
    let loadBefore = BenchMachine.loadAverage()
    let startedAt = Date()

    mutating func add(_ figure: BenchFigure) {
        figures.append(figure)
    }

    // MARK: Table

    func table() -> String {
        let load = BenchMachine.loadAverage()
        var lines = [
            "LongLink benchmark — \(command)",
            "date \(Self.timestamp(startedAt)); \(machine.cores) cores, \(machine.cpuModel), Linux \(machine.kernel); "
                + "release build: \(BenchMachine.isReleaseBuild ? "yes" : "NO (debug: figures not representative)")",
            "load average before \(Self.loads(loadBefore)), after \(Self.loads(load)); "
                + "\(runs) run(s) per figure, \(Self.number(duration)) s per measurement; value = median of runs",
            "",
        ]
        var rows = [["figure", "value", "unit", "baseline", "ratio", "target", "met", "runs"]]
        for figure in figures {
            rows.append([
                figure.label,
                Self.number(figure.value),
                figure.unit,
                figure.baseline.map(Self.number) ?? "",
                figure.ratio.map { String(format: "%.2fx", $0) } ?? "",
                figure.target?.text ?? "",
                figure.met.map { $0 ? "yes" : "NO" } ?? "",
                figure.samples.map(Self.number).joined(separator: " "),
            ])
        }
        lines += Self.align(rows)
        let notes = figures.compactMap { figure in figure.note.map { "- \(figure.label): \($0)" } } + self.notes
        if !notes.isEmpty {
            lines.append("")
            lines.append("notes:")
            lines += notes
        }
        return lines.joined(separator: "\n")
    }

    private static func align(_ rows: [[String]]) -> [String] {
        guard let width = rows.first?.count else { return [] }
        var widths = [Int](repeating: 0, count: width)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
            }.joined()
        }
    }

    // MARK: JSON

    func json() -> String {
        var machineObject = JSONObject()
        machineObject.add("nproc", machine.cores)
        machineObject.add("kernel", machine.kernel)
        machineObject.add("cpu", machine.cpuModel)
        var object = JSONObject()
        object.add("command", command)
        object.add("date", Self.timestamp(startedAt))
        object.add("release_build", BenchMachine.isReleaseBuild)
        object.addRaw("machine", machineObject.text())
        object.addRaw("load_before", Self.jsonArray(loadBefore))
        object.addRaw("load_after", Self.jsonArray(BenchMachine.loadAverage()))
        object.add("runs", runs)
        object.addRaw("duration_seconds", Self.jsonNumber(duration))
        var results = JSONObject()
        for figure in figures {
            var row = JSONObject()
            row.add("label", figure.label)
            row.add("unit", figure.unit)
            row.addRaw("value", Self.jsonNumber(figure.value))
            row.addRaw("samples", Self.jsonArray(figure.samples))
            if let baseline = figure.baseline {
                row.addRaw("baseline", Self.jsonNumber(baseline))
                row.addRaw("baseline_samples", Self.jsonArray(figure.baselineSamples ?? []))
            }
            if let ratio = figure.ratio { row.addRaw("ratio", Self.jsonNumber(ratio)) }
            if let target = figure.target { row.add("target", target.text) }
            if let met = figure.met { row.add("met", met) }
            if let note = figure.note { row.add("note", note) }
            results.addRaw(figure.key, row.text())
        }
        object.addRaw("results", results.text())
        object.addRaw("notes", "[" + notes.map(JSONObject.quoted).joined(separator: ",") + "]")
        return object.text()
    }

    private static func jsonNumber(_ value: Double) -> String {
        value.isFinite ? String(format: "%.6g", value) : "null"
    }

    private static func jsonArray(_ values: [Double]) -> String {
        "[" + values.map(jsonNumber).joined(separator: ",") + "]"
    }

    // MARK: Formatting

    /// Three significant digits for small values, whole numbers with thousands separators for large.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        let magnitude = abs(value)
        if magnitude >= 1000 {
            let digits = String(format: "%.0f", magnitude)
            var grouped = ""
            for (index, digit) in digits.enumerated() {
                if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
                grouped.append(digit)
            }
            return (value < 0 ? "-" : "") + grouped
        }
        if magnitude >= 100 { return String(format: "%.0f", value) }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }

    private static func loads(_ values: [Double]) -> String {
        values.map { String(format: "%.2f", $0) }.joined(separator: " ")
    }

    private static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in milliseconds, as a floating-point number.
    var inMilliseconds: Double { inSeconds * 1000 }

    /// The duration in microseconds, as a floating-point number.
    var inMicroseconds: Double { inSeconds * 1_000_000 }
}

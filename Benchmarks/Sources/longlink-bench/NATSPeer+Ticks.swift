import Foundation

extension NATSPeer {
    /// What one `nats-peer -mode ticks` run printed, with nats-server's CPU over it.
    struct TicksMeasured: Decodable, Sendable {
        var producedRate: Double
        /// Microseconds.
        var ageP50: Double
        var ageP99: Double
        var ageMax: Double
        var taken: Int
        var starved: Int
        /// Milliseconds.
        var longestGap: Double
        /// Milliseconds between two takes, the longest.
        var longestPause: Double
        /// Messages the subscriber's client dropped as a slow consumer.
        var dropped: Int
        /// Slow-consumer errors the client reported.
        var slowConsumers: Int
        var disconnections: Int
        /// Cores: the Go process less its publisher's thread, over the feed.
        var clientCPU: Double
        var feedSeconds: Double
        /// Cores: nats-server over the child's whole run (set here, not by the child).
        var serverCPU: Double = 0

        enum CodingKeys: String, CodingKey {
            case producedRate = "produced_rate"
            case ageP50 = "age_p50_us"
            case ageP99 = "age_p99_us"
            case ageMax = "age_max_us"
            case taken, starved
            case longestGap = "longest_gap_ms"
            case longestPause = "longest_pause_ms"
            case dropped
            case slowConsumers = "slow_consumers"
            case disconnections
            case clientCPU = "client_cpu"
            case feedSeconds = "feed_s"
        }
    }

    /// The ticks feed through this nats-server: a nats.go publisher and a subscriber spending
    /// `options.work` per message, in one child process.
    func ticks(_ options: TicksBenchmark.Options, _ settings: BenchSettings) async throws -> TicksMeasured {
        let before = Self.cpuTime(of: pid)
        var measured = try await measure(
            [
                "-mode", "ticks", "-work", "\(Int(options.work.inMicroseconds * 1_000))ns", "-rate",
                String(Int(options.rate)), "-symbols", String(TicksFeed.symbols), "-exponent",
                String(TicksFeed.exponent), "-seed", String(TicksFeed.seed),
                "-starved-ms", String(TicksOutcome.starvationBound / 1_000_000),
            ], settings, as: TicksMeasured.self)
        if let before, let after = Self.cpuTime(of: pid) {
            // The child's whole run: the feed and a few connects, which cost nats-server little.
            measured.serverCPU = (after - before) / max(measured.feedSeconds, 1e-3)
        }
        return measured
    }

    /// User plus system seconds of process `pid`, from /proc (clock ticks of 10 ms).
    static func cpuTime(of pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard fields.count > 12, ticksPerSecond > 0, let user = Double(fields[11]), let system = Double(fields[12])
        else { return nil }
        return (user + system) / ticksPerSecond
    }
}

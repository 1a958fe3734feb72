import Foundation
import Testing

@testable import longlink_bench

@Suite("longlink-bench")
struct BenchCommandTests {
    /// Every figure `bench rpc` reports; each must be a positive number. The names the issue's
    /// scripts read: `default` is the card's task-group race, `heap` the deadline index; the Redis
    /// row is there when redis-server and redis-benchmark are.
    static let rpcKeys =
        [
            "rpc.heap.in_flight_1.throughput", "rpc.heap.in_flight_64.throughput",
            "rpc.heap.in_flight_1024.throughput", "rpc.on_loop.in_flight_64.throughput", "rpc.heap.latency_p50",
            "rpc.heap.latency_p99", "rpc.heap.latency_p999", "rpc.on_loop.latency_p50", "rpc.on_loop.latency_p99",
            "rpc.default.in_flight_1.throughput", "rpc.default.in_flight_64.throughput",
            "rpc.default.in_flight_1024.throughput", "rpc.default.latency_p50",
        ] + (FleetBenchTests.redisPresent ? ["rpc.redis_ping.in_flight_1"] : [])

    /// Throughput rows and latency rows carry the baseline measured in the same run, and its ratio.
    static let keysWithBaseline = rpcKeys

    /// Runs the built `longlink-bench` with `arguments`.
    static func bench(_ arguments: [String], within timeout: Duration = .seconds(30)) async throws
        -> BenchProcess.Outcome
    {
        try await BenchProcess.run(arguments, within: timeout)
    }

    @Test func helpListsEveryScenario() async throws {
        let outcome = try await Self.bench(["--help"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("usage: longlink-bench [options] [SCENARIO]\n"))
        for scenario in BenchCommand.names {
            #expect(outcome.standardOutput.contains("\n\(scenario) "), "\(scenario) missing from --help")
        }
        #expect(outcome.standardOutput.contains("--in-flight N"))
        #expect(outcome.standardError.isEmpty)
    }

    @Test(arguments: [
        ["network"], ["rpc", "--runs", "0"], ["wire", "--duration", "0"], ["--prot"], ["rpc", "--design", "heap"],
        ["rpc", "--in-flight", "8", "--design", "fast"],
    ])
    func usageErrorsExit2(_ arguments: [String]) async throws {
        let outcome = try await Self.bench(arguments)
        #expect(outcome.status == 2)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("longlink-bench: "))
        #expect(outcome.standardError.contains("usage: longlink-bench"))
    }

    /// The probe is the child side of `memory` and `timeouts`: run by hand, with none of its
    /// environment, it says so instead of measuring.
    @Test func probeAloneRefuses() async throws {
        let outcome = try await Self.bench([BenchProbe.scenarioName])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("run by 'longlink-bench memory'"))
    }

    @Test func rpcJSONHasEveryFigure() async throws {
        let outcome = try await Self.bench(
            ["rpc", "--duration", "0.2", "--runs", "1", "--json"], within: .seconds(120))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let data = Data(outcome.standardOutput.utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["runs"] as? Int == 1)
        #expect((object["command"] as? String)?.hasPrefix("longlink-bench rpc") == true)
        #expect((object["duration_seconds"] as? Double).map { abs($0 - 0.2) < 1e-9 } == true)
        let machine = try #require(object["machine"] as? [String: Any])
        #expect((machine["nproc"] as? Int ?? 0) > 0)
        #expect(object["load_before"] is [Any])
        var results = try #require(object["results"] as? [String: Any])
        // The placement row is there when the cross-core probe ran (Linux, and both of its threads
        // got a CPU in time): a share of the window, from 0 to 100 %, that can be 0.
        if let placement = results.removeValue(forKey: "machine.far_placement_share.rpc_in_flight_1024") {
            let row = try #require(placement as? [String: Any])
            let samples = try #require(row["samples"] as? [Double])
            #expect(samples.count == 1 && samples.allSatisfy { (0...100).contains($0) })
            #expect(row["unit"] as? String == "%")
            #expect((row["note"] as? String ?? "").contains("% far)"))
        }
        #expect(Set(results.keys) == Set(Self.rpcKeys))
        for key in Self.rpcKeys {
            let row = try #require(results[key] as? [String: Any], "missing \(key)")
            #expect((row["value"] as? Double ?? 0) > 0, "\(key) value")
            #expect(!(row["unit"] as? String ?? "").isEmpty, "\(key) unit")
            let samples = try #require(row["samples"] as? [Double], "\(key) samples")
            #expect(samples.count == 1 && samples.allSatisfy { $0 > 0 }, "\(key) samples")
            if Self.keysWithBaseline.contains(key) {
                #expect((row["baseline"] as? Double ?? 0) > 0, "\(key) baseline")
                #expect((row["ratio"] as? Double ?? 0) > 0, "\(key) ratio")
            }
        }
        // Rows with a target say whether it was met.
        for key in ["rpc.heap.in_flight_64.throughput", "rpc.heap.in_flight_1024.throughput", "rpc.heap.latency_p50"] {
            let row = try #require(results[key] as? [String: Any])
            #expect(row["target"] is String, "\(key) target")
            #expect(row["met"] is Bool, "\(key) met")
        }
    }

    /// `--design` measures that design alone: its figure has a sample, the others none.
    @Test func designMeasuresOneDesignAlone() async throws {
        let outcome = try await Self.bench(
            ["rpc", "--in-flight", "8", "--design", "group", "--duration", "0.2", "--runs", "1", "--json"],
            within: .seconds(120))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        func samples(_ key: String) -> Int? { ((results[key] as? [String: Any])?["samples"] as? [Any])?.count }
        #expect(samples("rpc.default.in_flight_8.throughput") == 1)
        #expect(samples("rpc.default.in_flight_8.cpu_per_request") == 1)
        #expect(samples("rpc.heap.in_flight_8.throughput") == 0)
        #expect(samples("rpc.on_loop.in_flight_8.throughput") == 0)
    }

    /// `--in-flight` splits LongLink's CPU per request by thread role, read from /proc.
    @Test func inFlightJSONSplitsTheCPUByThread() async throws {
        let outcome = try await Self.bench(
            ["rpc", "--in-flight", "64", "--duration", "0.5", "--runs", "1", "--json"], within: .seconds(120))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        let total = try #require(
            (results["rpc.heap.in_flight_64.cpu_per_request"] as? [String: Any])?["value"] as? Double)
        var sum = 0.0
        for role in ["serverLoop", "clientLoop", "callers"] {
            let row = try #require(
                results["rpc.heap.in_flight_64.cpu_per_request.\(role)"] as? [String: Any], "\(role)")
            let value = try #require(row["value"] as? Double)
            #expect(value > 0, "\(role) does work per request")
            sum += value
            if role != "callers" { #expect((row["baseline"] as? Double ?? 0) > 0, "\(role) baseline") }
        }
        // The three roles are nearly all of the process's CPU, in debug builds as in release (the
        // whole-process figure comes from getrusage, hence some slack); misread /proc fields give
        // a small fraction.
        #expect(sum > total * 0.5 && sum < total * 1.2 + 0.5, "roles: \(sum) of \(total) µs")
    }

    /// Every figure `bench payloads` reports, each without and (but for the cache rows) with zlib.
    static let payloadKeys = [
        "payloads.cache_hit.echo.per_call", "payloads.cache_hit.candles.per_call", "payloads.candles.reply_bytes",
        "payloads.candles_zlib.reply_bytes", "payloads.records_64k_zlib.reply_bytes",
        "payloads.candles.per_call", "payloads.candles_zlib.per_call",
        "payloads.candles.throughput", "payloads.candles_zlib.throughput",
        "payloads.candles.cpu_per_call", "payloads.candles_zlib.cpu_per_call",
        "payloads.receive_64k.throughput", "payloads.receive_64k_zlib.throughput",
        "payloads.receive_64k.cpu_per_call", "payloads.receive_64k_zlib.cpu_per_call",
        "payloads.echo_64k.throughput", "payloads.echo_64k_zlib.throughput",
        "payloads.echo_64k.cpu_per_call", "payloads.echo_64k_zlib.cpu_per_call",
        "payloads.zlib.deflate.candles", "payloads.zlib.inflate.candles",
        "payloads.zlib.deflate.records_64k", "payloads.zlib.inflate.records_64k",
        "payloads.zlib.deflate6.candles", "payloads.zlib.deflate6.records_64k",
        "payloads.zlib.deflate6_bytes.candles", "payloads.zlib.deflate6_bytes.records_64k",
    ]

    /// Every payloads row has a positive value; the zlib rows and the cache rows carry the row they
    /// compare with; compressed replies are smaller than uncompressed ones, bytes read off the wire.
    @Test func payloadsJSONHasEveryFigure() async throws {
        let outcome = try await Self.bench(
            ["payloads", "--duration", "0.1", "--runs", "1", "--json"], within: .seconds(120))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        #expect(Set(results.keys) == Set(Self.payloadKeys))
        func row(_ key: String) throws -> [String: Any] { try #require(results[key] as? [String: Any], "\(key)") }
        for key in Self.payloadKeys {
            let row = try row(key)
            #expect((row["value"] as? Double ?? 0) > 0, "\(key) value")
            if key.contains("_zlib.") || key.contains("cache_hit") {
                #expect((row["baseline"] as? Double ?? 0) > 0, "\(key) baseline")
            }
        }
        #expect(
            try row("payloads.candles.reply_bytes")["value"] as? Double == Double(PayloadBenchmark.chartBytes.count))
        #expect(try row("payloads.records_64k_zlib.reply_bytes")["baseline"] as? Double == 65_536)
        for key in ["payloads.candles_zlib.reply_bytes", "payloads.records_64k_zlib.reply_bytes"] {
            #expect((try row(key)["ratio"] as? Double ?? 1) < 0.9, "\(key) compressed")
        }
    }

    /// The chart is 500 one-minute candles whose protobuf bytes decode back to it, the request is
    /// protobuf, and the 64 KiB payload is exactly 64 KiB of JSON.
    @Test func payloadsMeasureWhatTheySay() throws {
        let chart = PayloadBenchmark.chart
        #expect(chart.candles.count == 500)
        #expect(zip(chart.candles, chart.candles.dropFirst()).allSatisfy { $1.time - $0.time == 60 })
        #expect(chart.candles.allSatisfy { $0.low <= min($0.open, $0.close) && $0.high >= max($0.open, $0.close) })
        #expect(try CandleChart(serializedBytes: PayloadBenchmark.chartBytes) == chart)
        #expect(throws: BenchError.self) {
            try CandleChart(serializedBytes: Array(PayloadBenchmark.chartBytes.dropLast()))
        }
        // symbol = 1: "AAPL"; count = 2: 500 as a varint.
        #expect(PayloadBenchmark.chartRequestBytes == [0x0A, 4, 0x41, 0x41, 0x50, 0x4C, 0x10, 0xF4, 0x03])
        let records = PayloadBenchmark.records
        #expect(records.count == 65_536)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(records)) as? [[String: Any]])
        #expect(array.count > 300 && Set(array.compactMap { $0["id"] as? Int }).count == array.count)
    }

    @Test func wireTableShowsUnitsAndRows() async throws {
        let outcome = try await Self.bench(["wire", "--duration", "50ms", "--runs", "1"])
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.standardOutput.contains("frames/s"))
        #expect(outcome.standardOutput.contains("load average"))
        #expect(outcome.standardOutput.contains("small request"))
        #expect(outcome.standardOutput.contains("64 KiB push"))
    }

    @Test func medianAndPercentiles() {
        #expect(BenchStats.median([3, 1, 2]) == 2)
        #expect(BenchStats.median([4, 1, 2, 3]) == 2.5)
        let sorted = (1...1000).map(Double.init)
        #expect(BenchStats.percentile(sorted, 0.5) == 500)
        #expect(BenchStats.percentile(sorted, 0.99) == 990)
        #expect(BenchStats.percentile(sorted, 0.999) == 999)
        #expect(BenchStats.percentile([7], 0.999) == 7)
    }

    @Test func targets() {
        let both = BenchTarget.all(.ratioAtLeast(0.5, "half"), .atLeast(600_000, "600k"))
        #expect(both.isMet(value: 700_000, ratio: 0.6) == true)
        #expect(both.isMet(value: 500_000, ratio: 0.6) == false)
        #expect(both.isMet(value: 700_000, ratio: 0.4) == false)
        #expect(BenchTarget.ratioAtMost(1.5, "").isMet(value: 10, ratio: nil) == nil)
    }
}

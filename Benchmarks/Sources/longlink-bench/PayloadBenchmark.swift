import Foundation
import LongLink
import LongLinkServer
import LongLinkTesting
@_spi(Benchmarks) import LongLinkWire

/// `longlink-bench payloads`: what the payload features of issue 24 cost and save, each row beside
/// its counterpart in the same run against the same server.
///
/// - A `cacheFirst` call that hits the response cache against the same call network-only (a
///   loopback round trip), one call at a time.
/// - A chart of 500 minute-candles as protobuf (``CandleChart``, through the binary-message path:
///   `send(CandlesRequest)` decodes every reply into 500 records): the reply's payload bytes as the
///   server sends them with and without zlib, and the call's time and rate with each.
/// - 64 KiB of JSON-like trade records, received (a small request, a 64 KiB reply) and echoed
///   (64 KiB each way), in MB/s with and without zlib.
///
/// The server has compression on (its default); one client has it off (the default) and one on.
/// Within each run the two alternate, the first of them changing from run to run.
enum PayloadBenchmark {
    static let symbol = "AAPL"
    static let chart = CandleChart.sample(symbol: symbol, count: 500)
    static let chartBytes = chart.serializedBytes()
    static let chartRequest = CandlesRequest(symbol: symbol, count: 500)
    /// The request's payload, for the calls that send bytes (the codec is not used).
    static let chartRequestBytes = chartRequest.encodePayload(with: JSONPayloadCodec())
    static let records = tradeRecords(bytes: 64 << 10)
    /// The callers of the throughput rows: enough to keep both vCPUs busy.
    static let inFlight = 8
    /// The method that answers with ``records``.
    static let recordsMethod = "records"

    static var cacheFirst: RequestOptions {
        var options = RequestOptions()
        options.cache = .cacheFirst(maxAge: .seconds(3_600))
        return options
    }

    /// The scenario's methods, beside the server's `echo`: both answer inline on the loop with
    /// bytes encoded once, so the rows measure the link and its compression, not an encoder.
    static func routes(_ router: inout Router) {
        router.register(CandlesRequest.method, synchronous: { _, _ in chartBytes })
        router.register(recordsMethod, synchronous: { _, _ in records })
    }

    // MARK: The payload

    /// `bytes` bytes of a JSON array of trade records (id, symbol, side, price, quantity, time,
    /// venue) from a fixed seed, padded with spaces to the exact size: text that compresses well,
    /// but not to nothing.
    static func tradeRecords(bytes size: Int) -> [UInt8] {
        var random = SplitMix64(seed: 64)
        let symbols = [
            "AAPL", "MSFT", "NVDA", "AMZN", "GOOGL", "META", "TSLA", "AVGO", "JPM", "V", "0700.HK", "9988.HK",
        ]
        let venues = ["XNAS", "XNYS", "ARCX", "BATS", "XHKG"]
        var text = "["
        var separator = ""
        var id = 4_100_000 + random.next(below: 100_000)
        var millisecond = 34_200_000
        while true {
            id += 1 + random.next(below: 7)
            millisecond += random.next(below: 900)
            let hour = millisecond / 3_600_000
            let minute = millisecond / 60_000 % 60
            let second = millisecond / 1000 % 60
            let price = Double(10_000 + random.next(below: 90_000)) / 100
            let record =
                separator
                + "{\"id\":\(id),\"symbol\":\"\(symbols[random.next(below: symbols.count)])\","
                + "\"side\":\"\(random.next(below: 2) == 0 ? "buy" : "sell")\",\"price\":\(price),"
                + "\"qty\":\(100 * (1 + random.next(below: 50))),\"time\":\"2026-12-01T"
                + String(format: "%02d:%02d:%02d.%03dZ", hour, minute, second, millisecond % 1000)
                + "\",\"venue\":\"\(venues[random.next(below: venues.count)])\"}"
            guard text.utf8.count + record.utf8.count + 1 <= size else { break }
            text += record
            separator = ",\n"
        }
        text += "]"
        return Array(text.utf8) + [UInt8](repeating: 0x20, count: size - text.utf8.count)
    }

    // MARK: Measuring

    /// Microseconds per call of `call`, one call at a time, over the measured window.
    static func perCall(_ settings: BenchSettings, _ call: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let measureFrom = clock.now.advanced(by: settings.warmUp)
        while clock.now < measureFrom { try await call() }
        let measureUntil = clock.now.advanced(by: settings.duration)
        var calls = 0
        let start = clock.now
        var now = start
        while now < measureUntil {
            try await call()
            calls += 1
            now = clock.now
        }
        return (now - start).inMicroseconds / Double(calls)
    }

    /// Calls per second with ``inFlight`` callers looping on `call`, and the process's CPU time
    /// per call over the same window.
    static func rate(_ settings: BenchSettings, _ call: @escaping @Sendable () async throws -> Void) async throws
        -> ThroughputSample
    {
        let done = BenchCounter()
        let tallies = BenchTallies(count: inFlight)
        return try await withThrowingTaskGroup(of: Void.self, returning: ThroughputSample.self) { callers in
            for tally in tallies.tallies {
                callers.addTask {
                    while !done.isStopped {
                        try await call()
                        tally.add()
                    }
                }
            }
            try await Task.sleep(for: settings.warmUp)
            let clock = ContinuousClock()
            let before = (calls: tallies.value, time: clock.now, cpu: ProcessUsage.cpuTime())
            try await Task.sleep(for: settings.duration)
            let sample = ThroughputSample(
                requests: tallies.value - before.calls, elapsed: clock.now - before.time,
                cpu: ProcessUsage.cpuTime() - before.cpu)
            done.stop()
            try await callers.waitForAll()
            return sample
        }
    }

    /// ``perCall(_:_:)`` of `call`, which must be answered by the cache: throws when the server
    /// received more than the one request that filled it.
    static func cacheHits(_ settings: BenchSettings, server: BenchServer, _ call: () async throws -> Void)
        async throws -> Double
    {
        let received = server.server.statistics.requestsReceived
        let time = try await perCall(settings, call)
        let sent = server.server.statistics.requestsReceived - received
        guard sent <= 1 else { throw BenchError("\(sent) cacheFirst calls went to the network") }
        return time
    }

    /// The reply payload's size as the server sends it, read by a bare client that offers zlib or
    /// not; a compressed reply is inflated and compared with `expected`.
    static func wireBytes(port: Int, method: String, zlib: Bool, expected: [UInt8]) async throws -> Double {
        try await onPlainThread("baseline") {
            let metadata = zlib ? PayloadCompression.zlibOfferMetadata : [:]
            let response = try BaselineClient(port: port, metadata: metadata).call(method, payload: [])
            guard response.status == nil else { throw BenchError("\(method) failed: \(response)") }
            guard response.compression == (zlib ? PayloadCompression.zlibWireValue : PayloadCompression.uncompressedWireValue) else {
                throw BenchError(
                    "\(method): reply compression \(response.compression) with zlib \(zlib ? "on" : "off")")
            }
            let payload = zlib ? try PayloadCompression.inflate(response.payload, limit: 1 << 20) : response.payload
            guard payload == expected else { throw BenchError("\(method): the reply is not the payload sent") }
            return Double(response.payload.count)
        }
    }

    /// Every call the rows make returns what it should, on both clients.
    static func check(_ clients: [LongLinkClient]) async throws {
        for client in clients {
            guard try await client.send(chartRequest) == chart else { throw BenchError("the chart did not round-trip") }
            guard try await client.request(recordsMethod) == records,
                try await client.request("echo", payload: records) == records
            else { throw BenchError("the 64 KiB records did not round-trip") }
        }
    }

    // MARK: The scenario

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let samples = try await withBenchServer(routes: routes) { server in
            try await withBenchClient(port: server.port) { plain in
                try await withBenchClient(port: server.port, configure: { $0.compression = .zlib() }) { zlib in
                    try await check([plain.client, zlib.client])
                    return try await measure(settings, server: server, plain: plain.client, zlib: zlib.client)
                }
            }
        }
        for figure in figures(samples) { report.add(figure) }
        report.notes.append(
            "payloads: one server (1 event loop, compression on: zlib from 1,024 bytes, its default), two "
                + "LongLinkClients with their own loops, compression off (the default) and on; the throughput rows "
                + "run \(inFlight) callers; CPU rows are whole-process CPU time (server and client) per call.")
    }

    private static func measure(
        _ settings: BenchSettings, server: BenchServer, plain: LongLinkClient, zlib: LongLinkClient
    ) async throws -> [String: [Double]] {
        var samples: [String: [Double]] = [:]
        let requestBytes = chartRequestBytes
        let cached = cacheFirst
        for run in 1...settings.runs {
            let progress = "payloads, run \(run)/\(settings.runs)"
            benchProgress("\(progress): cache hits against round trips")
            samples["echo.network", default: []].append(
                try await perCall(settings) { _ = try await plain.request("echo", payload: benchPayload) })
            samples["echo.hit", default: []].append(
                try await cacheHits(settings, server: server) {
                    _ = try await plain.request("echo", payload: benchPayload, options: cached)
                })
            samples["candles.network", default: []].append(
                try await perCall(settings) {
                    _ = try await plain.request(CandlesRequest.method, payload: requestBytes)
                })
            samples["candles.hit", default: []].append(
                try await cacheHits(settings, server: server) {
                    _ = try await plain.request(CandlesRequest.method, payload: requestBytes, options: cached)
                })
            samples["candles.bytes", default: []].append(
                try await wireBytes(port: server.port, method: CandlesRequest.method, zlib: false, expected: chartBytes)
            )
            samples["candles.zlib.bytes", default: []].append(
                try await wireBytes(port: server.port, method: CandlesRequest.method, zlib: true, expected: chartBytes))
            samples["records.bytes", default: []].append(
                try await wireBytes(port: server.port, method: recordsMethod, zlib: false, expected: records))
            samples["records.zlib.bytes", default: []].append(
                try await wireBytes(port: server.port, method: recordsMethod, zlib: true, expected: records))
            benchProgress("\(progress): zlib alone")
            var codec = settings
            codec.duration = settings.duration / 5
            for (name, payload) in [("candles", chartBytes), ("records_64k", records)] {
                guard let deflated = PayloadCompression.deflate(payload) else {
                    throw BenchError("\(name) did not deflate")
                }
                samples["zlib.deflate.\(name)", default: []].append(
                    try await perCall(codec) { _ = PayloadCompression.deflate(payload) })
                // zlib's own default level, beside the library's (1), for the choice of default.
                samples["zlib.deflate6.\(name)", default: []].append(
                    try await perCall(codec) { _ = PayloadCompression.deflate(payload, level: 6) })
                samples["zlib.deflate6_bytes.\(name)", default: []].append(
                    Double(PayloadCompression.deflate(payload, level: 6)?.count ?? payload.count))
                samples["zlib.inflate.\(name)", default: []].append(
                    try await perCall(codec) { _ = try PayloadCompression.inflate(deflated, limit: 1 << 20) })
            }
            // Without and with compression, the first of the two alternating from run to run.
            for compressed in run % 2 == 1 ? [false, true] : [true, false] {
                let client = compressed ? zlib : plain
                let variant = compressed ? ".zlib" : ""
                benchProgress("\(progress): candles\(compressed ? ", zlib" : "")")
                samples["candles\(variant).per_call", default: []].append(
                    try await perCall(settings) { _ = try await client.send(chartRequest) })
                let candles = try await rate(settings) { _ = try await client.send(chartRequest) }
                samples["candles\(variant).throughput", default: []].append(candles.rate)
                samples["candles\(variant).cpu_per_call", default: []].append(candles.cpuMicrosecondsPerRequest)
                benchProgress("\(progress): 64 KiB\(compressed ? ", zlib" : "")")
                let received = try await rate(settings) { _ = try await client.request(recordsMethod) }
                samples["receive_64k\(variant).throughput", default: []].append(
                    received.rate * Double(records.count) / 1e6)
                samples["receive_64k\(variant).cpu_per_call", default: []].append(received.cpuMicrosecondsPerRequest)
                let echoed = try await rate(settings) { _ = try await client.request("echo", payload: records) }
                samples["echo_64k\(variant).throughput", default: []].append(echoed.rate * Double(records.count) / 1e6)
                samples["echo_64k\(variant).cpu_per_call", default: []].append(echoed.cpuMicrosecondsPerRequest)
            }
        }
        return samples
    }

    private static func figures(_ samples: [String: [Double]]) -> [BenchFigure] {
        // A row without compression and its twin with zlib, whose baseline column is the first.
        func pair(_ subject: String, _ measure: String, _ label: String, unit: String, note: String? = nil)
            -> [BenchFigure]
        {
            let plain = samples["\(subject).\(measure)"] ?? []
            return [
                BenchFigure(
                    key: "payloads.\(subject).\(measure)", label: label, unit: unit, samples: plain, note: note),
                BenchFigure(
                    key: "payloads.\(subject)_zlib.\(measure)", label: label + ", zlib", unit: unit,
                    samples: samples["\(subject).zlib.\(measure)"] ?? [], baselineSamples: plain),
            ]
        }
        let chartSize = BenchReport.number(Double(chartBytes.count))
        var figures = [
            BenchFigure(
                key: "payloads.cache_hit.echo.per_call", label: "cacheFirst hit, echo (16 B reply)", unit: "µs",
                samples: samples["echo.hit"] ?? [], baselineSamples: samples["echo.network"],
                note: "baseline column: the same call network-only, a loopback round trip; both one call at a time "
                    + "with request(_:payload:options:) (bytes, no decoding)"),
            BenchFigure(
                key: "payloads.cache_hit.candles.per_call", label: "cacheFirst hit, candles (\(chartSize) B reply)",
                unit: "µs", samples: samples["candles.hit"] ?? [], baselineSamples: samples["candles.network"],
                note: "as above, the chart's reply uncompressed"),
            BenchFigure(
                key: "payloads.candles.reply_bytes", label: "candles reply payload, 500 records (protobuf)", unit: "B",
                samples: samples["candles.bytes"] ?? [],
                note: "message Candle { int64 time; double open, high, low, close; int64 volume }, prices in cents "
                    + "from a seeded random walk; the payload field as sent, read by a bare client"),
            BenchFigure(
                key: "payloads.candles_zlib.reply_bytes", label: "candles reply payload, zlib", unit: "B",
                samples: samples["candles.zlib.bytes"] ?? [], baselineSamples: samples["candles.bytes"],
                note: "sent to a bare client that offered zlib; it inflates back to the chart's bytes"),
        ]
        figures += pair("candles", "per_call", "candles call, send() decoding 500 records, 1 at a time", unit: "µs")
        figures += pair("candles", "throughput", "candles calls, \(inFlight) in flight", unit: "req/s")
        figures += pair("candles", "cpu_per_call", "candles CPU per call", unit: "µs")
        figures.append(
            BenchFigure(
                key: "payloads.records_64k_zlib.reply_bytes", label: "64 KiB records reply payload, zlib", unit: "B",
                samples: samples["records.zlib.bytes"] ?? [], baselineSamples: samples["records.bytes"],
                note: "a JSON array of trade records (id, symbol, side, price, qty, time, venue) from a seeded "
                    + "generator, space-padded to 65,536 B; baseline column: the same reply to a client without zlib"))
        figures += pair(
            "receive_64k", "throughput", "64 KiB replies received, \(inFlight) in flight", unit: "MB/s",
            note: "reply payload bytes (10^6 B) a second, before compression; the requests are empty")
        figures += pair("receive_64k", "cpu_per_call", "64 KiB reply CPU per call", unit: "µs")
        figures += pair(
            "echo_64k", "throughput", "64 KiB echoed, \(inFlight) in flight", unit: "MB/s",
            note: "payload bytes (10^6 B) a second one way; the same 64 KiB goes back, compressed both ways with zlib")
        figures += pair("echo_64k", "cpu_per_call", "64 KiB echo CPU per call", unit: "µs")
        for (name, label) in [("candles", "candles reply"), ("records_64k", "64 KiB records")] {
            figures.append(
                BenchFigure(
                    key: "payloads.zlib.deflate6_bytes.\(name)", label: "zlib level 6 size, \(label)", unit: "B",
                    samples: samples["zlib.deflate6_bytes.\(name)"] ?? []))
            for step in ["deflate", "deflate6", "inflate"] {
                let title = step == "deflate6" ? "deflate at level 6" : step == "deflate" ? "deflate (level 1)" : step
                figures.append(
                    BenchFigure(
                        key: "payloads.zlib.\(step).\(name)", label: "zlib \(title) alone, \(label)", unit: "µs",
                        samples: samples["zlib.\(step).\(name)"] ?? [],
                        note: name == "candles" && step == "deflate"
                            ? "zlib on one thread, no link (each --duration / 5): what a compressed "
                                + "reply costs in zlib alone, deflated once by the sender and inflated once by the receiver"
                            : nil))
            }
        }
        return figures
    }
}

import LongLink
import LongLinkServer
@_spi(Benchmarks) import LongLinkTesting
import LongLinkTransport

/// `longlink-bench tls`: what TLS costs. The same measurements over TLS and over plain TCP,
/// alternating in one run, the plain figure as the baseline column: rpc throughput with 64
/// requests in flight, reliable pushes per second, and connections per second (a TLS handshake
/// each, against a bare TCP connect). The certificate is made at start (EC P-256, TLS 1.3).
enum TLSBenchmark {
    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let certificate = try SelfSignedTLS(commonName: "longlink-bench")
        let serverTLS = certificate.serverConfiguration
        let client = certificate.clientConfiguration

        var samples: [String: [Double]] = [:]
        let plain = try await BenchServer.start()
        let secure = try await BenchServer.start { $0.tls = serverTLS }
        do {
            try await withBenchClient(port: plain.port) { plainClient in
                try await withBenchClient(port: secure.port, configure: { $0.tls = client }) { tlsClient in
                    for run in 1...settings.runs {
                        benchProgress("tls: rpc, run \(run)/\(settings.runs)")
                        samples["rpc.plain", default: []].append(
                            try await RPCBenchmark.throughput(plainClient.client, inFlight: 64, settings: settings))
                        samples["rpc.tls", default: []].append(
                            try await RPCBenchmark.throughput(tlsClient.client, inFlight: 64, settings: settings))
                    }
                }
            }
            for run in 1...settings.runs {
                benchProgress("tls: reliable pushes, run \(run)/\(settings.runs)")
                samples["pushes.plain", default: []].append(
                    try await PushBenchmark.longLink(
                        server: plain, principal: "tls-bench-plain-\(run)", reliable: true, pushBufferLimit: nil,
                        settings: settings
                    ).rate)
                samples["pushes.tls", default: []].append(
                    try await PushBenchmark.longLink(
                        server: secure, principal: "tls-bench-tls-\(run)", reliable: true, pushBufferLimit: nil,
                        settings: settings, tls: client
                    ).rate)
            }
            let loop = EventLoop(name: "bench-handshakes")
            for run in 1...settings.runs {
                benchProgress("tls: handshakes, run \(run)/\(settings.runs)")
                samples["connects.plain", default: []].append(
                    try await connections(port: plain.port, handshake: false, certificate, on: loop, settings: settings))
                samples["connects.tls", default: []].append(
                    try await connections(port: secure.port, handshake: true, certificate, on: loop, settings: settings))
            }
            await loop.shutdownAndWait()
        } catch {
            await plain.stop()
            await secure.stop()
            throw error
        }
        await plain.stop()
        await secure.stop()

        report.add(
            BenchFigure(
                key: "tls.rpc.in_flight_64.throughput", label: "rpc throughput over TLS, 64 in flight", unit: "req/s",
                samples: samples["rpc.tls"] ?? [], baselineSamples: samples["rpc.plain"],
                note: "baseline column: the same client and server over plain TCP, measured alternately"))
        report.add(
            BenchFigure(
                key: "tls.pushes.reliable.throughput", label: "reliable pushes over TLS", unit: "msg/s",
                samples: samples["pushes.tls"] ?? [], baselineSamples: samples["pushes.plain"]))
        report.add(
            BenchFigure(
                key: "tls.handshakes_per_second", label: "TLS handshakes per second, one at a time", unit: "conn/s",
                samples: samples["connects.tls"] ?? [], baselineSamples: samples["connects.plain"],
                note:
                    "connect + TLS 1.3 handshake (EC P-256, verified) + close, sequential; baseline: plain TCP connects"
            ))
    }

    /// Connections per second, one after another, each closed at once.
    private static func connections(
        port: Int, handshake: Bool, _ certificate: SelfSignedTLS, on loop: EventLoop, settings: BenchSettings
    ) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < settings.duration {
            let connection = try await certificate.connect(port: port, handshake: handshake, on: loop)
            connection.close(.immediately)
            count += 1
        }
        return Double(count) / (clock.now - start).inSeconds
    }
}

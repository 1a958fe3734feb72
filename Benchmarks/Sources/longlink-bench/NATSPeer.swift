import BenchCLISupport
import Foundation
@_spi(Benchmarks) import LongLinkTesting

/// Core NATS, the peer `longlink-bench peers` measures beside LongLink: a `nats-server` of the
/// run's own on a free port, and `nats-peer` (Benchmarks/Peers/nats/main.go, built once per run
/// into a temporary directory) measuring pub/sub and request-reply through it.
///
/// The Go program uses Debian's NATS client (golang-github-nats-io-go-nats-dev, under
/// /usr/share/gocode/src) and builds offline in GOPATH mode: `GOPATH=/usr/share/gocode
/// GO111MODULE=off go build`. A go.mod would need the module proxy (`-mod=mod` fetches), which an
/// offline machine does not reach.
final class NATSPeer: Sendable {
    static let install = "apt-get install nats-server golang-go golang-github-nats-io-go-nats-dev"
    static let goPath = "/usr/share/gocode"
    /// The Go source, found from this file's place in the checkout: the bench is always built from source.
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Peers/nats/main.go")

    let port: Int
    private let directory: URL
    private let program: String
    private let server: ChildProcess

    var pid: Int32 { server.processIdentifier }

    private init(port: Int, directory: URL, program: String, server: ChildProcess) {
        self.port = port
        self.directory = directory
        self.program = program
        self.server = server
    }

    /// `name` on `path` (the PATH by default), or nil.
    static func locate(_ name: String, path: String? = nil) -> String? {
        let directories = (path ?? ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first(where: FileManager.default.isExecutableFile)
    }

    /// Runs `body` with NATS started and `nats-peer` built, and stops the server (by its pid) and
    /// removes the build afterwards, also when `body` throws. Without `nats-server`, `go` or a Go
    /// client that compiles, `body` is not run: the reason (and what to install) is appended to
    /// `notes` and printed, and the result is nil.
    static func with<Value>(
        notes: inout [String], _ body: (NATSPeer) async throws -> Value
    ) async throws -> Value? {
        guard let serverPath = locate("nats-server"), let go = locate("go") else {
            let missing = ["nats-server", "go"].filter { locate($0) == nil }.joined(separator: " and ")
            return skip("\(missing) not on the PATH (Debian: \(install); nats-server lands in /usr/sbin)", &notes)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-bench-nats-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let program = directory.appendingPathComponent("nats-peer").path
        benchProgress("peers: building \(source.path) with \(go)")
        let build = try await runChild(
            "go build", go, arguments: ["build", "-o", program, source.path], environment: buildEnvironment(directory),
            capture: .standardError, killedAfter: .seconds(600))
        guard build.status == 0 else {
            let reason = build.output.split(whereSeparator: \.isNewline).prefix(3).joined(separator: "; ")
            return skip("the NATS Go client did not compile (\(reason)); Debian: \(install)", &notes)
        }
        let peer = try await start(serverPath, directory: directory, program: program)
        benchProgress("peers: nats-server pid \(peer.pid) on port \(peer.port)")
        do {
            let value = try await body(peer)
            await peer.stop()
            return value
        } catch {
            await peer.stop()
            throw error
        }
    }

    private static func skip<Value>(_ reason: String, _ notes: inout [String]) -> Value? {
        let line = "peers: NATS rows skipped: \(reason)"
        notes.append(line)
        Terminal.standardError.line("longlink-bench \(line)")
        return nil
    }

    /// GOPATH mode over Debian's Go sources; a build cache of the run's own when the environment
    /// names no home for Go's.
    private static func buildEnvironment(_ directory: URL) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["GOPATH"] = goPath
        environment["GO111MODULE"] = "off"
        environment["GOFLAGS"] = ""
        if environment["GOCACHE"] == nil, environment["HOME"] == nil, environment["XDG_CACHE_HOME"] == nil {
            environment["GOCACHE"] = directory.appendingPathComponent("cache").path
        }
        return environment
    }

    private static func start(_ serverPath: String, directory: URL, program: String) async throws -> NATSPeer {
        var lastError: any Error = BenchError("nats-server did not start")
        // The free port can be taken between the probe and nats-server's bind: try a few.
        for _ in 0..<5 {
            let port = try await freePort()
            let process = try ChildProcess(
                serverPath, arguments: ["-a", "127.0.0.1", "-p", String(port)], standardInput: .nullDevice,
                standardOutput: .nullDevice, standardError: .nullDevice)
            let peer = NATSPeer(port: port, directory: directory, program: program, server: process)
            do {
                try await peer.waitUntilReady()
                return peer
            } catch {
                lastError = error
                await peer.stop()
            }
        }
        throw lastError
    }

    /// Ready once a connection gets the server's `INFO` greeting.
    private func waitUntilReady() async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while ContinuousClock.now < deadline, server.isRunning {
            if let fd = try? connectLoopback(port: port, receiveTimeoutSeconds: 2) {
                var greeting = [UInt8](repeating: 0, count: 4)
                let count = greeting.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                Glibc.close(fd)
                if count == 4, greeting == Array("INFO".utf8) { return }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        if let status = server.terminationStatus {
            throw BenchError("nats-server on port \(port) exited with \(status) before it greeted")
        }
        throw BenchError("nats-server on port \(port) did not greet within 10 s")
    }

    /// SIGKILL (it keeps nothing) and a bounded wait for the exit.
    private func stop() async {
        server.kill()
        _ = await server.waitForExit(within: .seconds(10))
    }

    /// What one `nats-peer` run printed.
    struct Measured: Decodable, Sendable {
        var rate: Double
        /// Microseconds; one request in flight only.
        var p50: Double?
        /// Pub/sub: messages the subscriber's client dropped as a slow consumer.
        var dropped: Int

        enum CodingKeys: String, CodingKey {
            case rate
            case p50 = "p50_us"
            case dropped
        }
    }

    /// Messages per second delivered to one subscriber, one publisher publishing `size`-byte messages.
    func pubSub(size: Int, _ settings: BenchSettings) async throws -> Measured {
        try await measure(["-mode", "pubsub", "-size", String(size)], settings)
    }

    /// Requests per second with `inFlight` requests kept in flight against an echoing responder.
    func requestReply(inFlight: Int, size: Int, _ settings: BenchSettings) async throws -> Measured {
        try await measure(["-mode", "request", "-in-flight", String(inFlight), "-size", String(size)], settings)
    }

    /// Runs `nats-peer` with `arguments` after the run's timing; decodes the line it prints.
    func measure<Result: Decodable>(
        _ arguments: [String], _ settings: BenchSettings, as _: Result.Type = Measured.self
    ) async throws -> Result {
        let timing = [
            "-url", "nats://127.0.0.1:\(port)", "-duration", "\(Int(settings.duration.inMicroseconds))us",
            "-warmup", "\(Int(settings.warmUp.inMicroseconds))us",
        ]
        let run = try await runChild(
            "nats-peer", program, arguments: timing + arguments, capture: .standardOutput,
            killedAfter: settings.warmUp + settings.duration + .seconds(60))
        guard run.status == 0 else { throw BenchError("nats-peer \(arguments) exited with \(run.status)") }
        do {
            return try JSONDecoder().decode(Result.self, from: Data(run.output.utf8))
        } catch {
            throw BenchError("nats-peer printed no result: \(run.output)")
        }
    }
}

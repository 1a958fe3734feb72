import Foundation
import LongLinkWire

/// The floor for LongLink's overhead: a bare client with a blocking socket, run on one plain
/// thread, no tasks, no actor, no timers. It speaks the same frames (`Frame.encodeDelimited`,
/// `FrameDecoder`) to the same server, calls the same `echo` method with the same payload and the
/// same `timeout_ms` field (so the server does the same work per request), and pipelines to keep
/// a fixed number of requests in flight.
final class BaselineClient {
    /// The `timeout_ms` sent with every request, like the client's default timeout.
    static let timeoutMilliseconds: UInt32 = 10_000

    private let fd: Int32
    private var decoder = FrameDecoder()
    private var frames: [Frame] = []
    private let readBuffer: UnsafeMutableRawBufferPointer
    private var output: [UInt8] = []
    private var nextID: UInt64 = 1

    /// Connects (blocking) to 127.0.0.1:`port` and exchanges Hello/Welcome, with `metadata` in the
    /// `Hello`.
    init(
        port: Int, clientID: String = "baseline-" + String(UInt64.random(in: 0...UInt64.max), radix: 36),
        metadata: [String: String] = [:]
    ) throws {
        let fd = try connectLoopback(port: port, receiveTimeoutSeconds: 20)
        self.fd = fd
        readBuffer = .allocate(byteCount: 64 << 10, alignment: 16)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        Frame.hello(Frame.Hello(clientID: clientID, metadata: metadata)).encodeDelimited(into: &output)
        try flushOutput()
        let first = try nextFrame()
        guard case .welcome = first else { throw BenchError("expected Welcome, got \(first)") }
    }

    deinit {
        Glibc.close(fd)
        readBuffer.deallocate()
    }

    // MARK: Request/response

    private func appendRequest(method: String = "echo", payload: [UInt8]) {
        Frame.request(
            Frame.Request(
                requestID: String(nextID), method: method, payload: payload,
                timeoutMilliseconds: Self.timeoutMilliseconds)
        ).encodeDelimited(into: &output)
        nextID += 1
    }

    /// Calls `method` once and waits for its response.
    func call(_ method: String, payload: [UInt8]) throws -> Frame.Response {
        appendRequest(method: method, payload: payload)
        try flushOutput()
        while true {
            if case .response(let response) = try nextFrame() { return response }
        }
    }

    /// Keeps `inFlight` requests in flight; after `warmUp`, counts completions for `duration`.
    /// Returns requests per second.
    func throughput(inFlight: Int, warmUp: Duration, duration: Duration) throws -> ThroughputSample {
        for _ in 0..<inFlight { appendRequest(payload: benchPayload) }
        try flushOutput()
        var outstanding = inFlight
        var completed = 0
        let start = Self.now()
        let measureFrom = start + warmUp.inSeconds
        let measureUntil = measureFrom + duration.inSeconds
        var counted: (count: Int, at: Double, cpu: Duration, roles: [ProcessUsage.ThreadRole: Duration])?
        var stopping = false
        var result = ThroughputSample(requests: 0, elapsed: .seconds(1), cpu: .zero)
        while outstanding > 0 {
            try readFrames()
            for frame in frames {
                guard case .response(let response) = frame else { continue }
                guard response.status == nil else { throw BenchError("echo failed: \(response)") }
                completed += 1
                if stopping {
                    outstanding -= 1
                } else {
                    appendRequest(payload: benchPayload)
                }
            }
            frames.removeAll(keepingCapacity: true)
            if !output.isEmpty { try flushOutput() }
            if !stopping {
                let now = Self.now()
                if counted == nil, now >= measureFrom {
                    counted = (completed, now, ProcessUsage.cpuTime(), ProcessUsage.cpuTimeByRole())
                } else if let counted, now >= measureUntil {
                    result = ThroughputSample(
                        requests: completed - counted.count, elapsed: .seconds(now - counted.at),
                        cpu: ProcessUsage.cpuTime() - counted.cpu,
                        cpuByRole: ProcessUsage.cpuTimeByRole(since: counted.roles))
                    stopping = true
                }
            }
        }
        return result
    }

    /// One request at a time; after `warmUp`, records each round trip for `duration`. Returns the
    /// round trips in microseconds, sorted.
    func latencies(warmUp: Duration, duration: Duration) throws -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(200_000)
        let start = Self.now()
        let measureFrom = start + warmUp.inSeconds
        let measureUntil = measureFrom + duration.inSeconds
        while true {
            let sent = Self.now()
            guard sent < measureUntil else { break }
            let response = try call("echo", payload: benchPayload)
            guard response.status == nil else { throw BenchError("echo failed: \(response)") }
            if sent >= measureFrom { samples.append((Self.now() - sent) * 1e6) }
        }
        return samples.sorted()
    }

    // MARK: Pushes

    /// Logs in as `principal` (binding the connection), then sends `Sync`.
    func login(principal: String) throws {
        let response = try call("login", payload: Array(principal.utf8))
        guard response.status == nil else { throw BenchError("login failed: \(response)") }
        Frame.sync(Frame.Sync()).encodeDelimited(into: &output)
        try flushOutput()
    }

    /// Reads pushes, acknowledging reliable ones after every read (in `Ack`s of at most 256 seqs,
    /// like the client's default batch); after `warmUp`, counts pushes for `duration`. Returns
    /// pushes per second. Ends by closing the socket (the caller drops the client).
    func consumePushes(warmUp: Duration, duration: Duration) throws -> Double {
        var received = 0
        var seqs: [UInt64] = []
        let start = Self.now()
        let measureFrom = start + warmUp.inSeconds
        let measureUntil = measureFrom + duration.inSeconds
        var counted: (count: Int, at: Double)?
        while true {
            try readFrames()
            for frame in frames {
                guard case .push(let push) = frame else { continue }
                received += 1
                if push.seq > 0 { seqs.append(push.seq) }
            }
            frames.removeAll(keepingCapacity: true)
            var index = 0
            while index < seqs.count {
                let end = min(seqs.count, index + 256)
                Frame.ack(Frame.Ack(seqs: Array(seqs[index..<end]))).encodeDelimited(into: &output)
                index = end
            }
            seqs.removeAll(keepingCapacity: true)
            if !output.isEmpty { try flushOutput() }
            let now = Self.now()
            if counted == nil, now >= measureFrom {
                counted = (received, now)
            } else if let counted, now >= measureUntil {
                return Double(received - counted.count) / (now - counted.at)
            }
        }
    }

    // MARK: Socket

    private func flushOutput() throws {
        var offset = 0
        try output.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw BenchError("write: errno \(errno)")
                }
                offset += written
            }
        }
        output.removeAll(keepingCapacity: true)
    }

    /// One blocking read, decoded into `frames` (appended).
    private func readFrames() throws {
        while true {
            let count = Glibc.read(fd, readBuffer.baseAddress!, readBuffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw BenchError("read: errno \(errno)")
            }
            guard count > 0 else { throw BenchError("the server closed the connection") }
            try decoder.decode(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]), into: &frames)
            return
        }
    }

    private func nextFrame() throws -> Frame {
        while frames.isEmpty { try readFrames() }
        return frames.removeFirst()
    }

    /// Monotonic time in seconds.
    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// The `baseline` scenario's measurements, each on its own plain thread and socket.
enum BaselineBenchmark {
    static func throughput(port: Int, inFlight: Int, settings: BenchSettings) async throws -> Double {
        try await measure(port: port, inFlight: inFlight, settings: settings).rate
    }

    /// ``throughput(port:inFlight:settings:)`` with the process's CPU time per request.
    static func measure(port: Int, inFlight: Int, settings: BenchSettings) async throws -> ThroughputSample {
        try await onPlainThread("baseline") {
            try BaselineClient(port: port).throughput(
                inFlight: inFlight, warmUp: settings.warmUp, duration: settings.duration)
        }
    }

    static func latencies(port: Int, settings: BenchSettings) async throws -> [Double] {
        try await onPlainThread("baseline") {
            try BaselineClient(port: port).latencies(warmUp: settings.warmUp, duration: settings.duration)
        }
    }

    /// Logs in as `principal`, sends `Sync`, calls `ready`, then consumes pushes.
    static func pushes(
        port: Int, principal: String, settings: BenchSettings, ready: @escaping @Sendable () -> Void
    ) async throws -> Double {
        try await onPlainThread("baseline") {
            let client = try BaselineClient(port: port)
            try client.login(principal: principal)
            ready()
            return try client.consumePushes(warmUp: settings.warmUp, duration: settings.duration)
        }
    }

    /// `longlink-bench baseline`: the bare client alone, against a fresh server.
    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let figures = try await withBenchServer { server in
            var figures: [BenchFigure] = []
            for inFlight in RPCBenchmark.inFlightLevels {
                var samples: [Double] = []
                for run in 1...settings.runs {
                    benchProgress("baseline: \(inFlight) in flight, run \(run)/\(settings.runs)")
                    samples.append(try await throughput(port: server.port, inFlight: inFlight, settings: settings))
                }
                figures.append(
                    BenchFigure(
                        key: "baseline.in_flight_\(inFlight).throughput", label: "baseline, \(inFlight) in flight",
                        unit: "req/s", samples: samples))
            }
            var percentiles: [[Double]] = [[], [], []]
            for run in 1...settings.runs {
                benchProgress("baseline: latency, run \(run)/\(settings.runs)")
                let sorted = try await latencies(port: server.port, settings: settings)
                for (index, fraction) in [0.5, 0.99, 0.999].enumerated() {
                    percentiles[index].append(BenchStats.percentile(sorted, fraction))
                }
            }
            for (index, name) in ["p50", "p99", "p999"].enumerated() {
                figures.append(
                    BenchFigure(
                        key: "baseline.latency.\(name)", label: "baseline latency \(name), 1 in flight", unit: "µs",
                        samples: percentiles[index]))
            }
            return figures
        }
        for figure in figures { report.add(figure) }
    }
}

/// A blocking TCP socket connected to `127.0.0.1:port`, whose reads give up after
/// `receiveTimeoutSeconds` (a stuck peer must not hang a benchmark). Closed again on failure.
func connectLoopback(port: Int, receiveTimeoutSeconds: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port)).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        let failure = errno
        Glibc.close(fd)
        throw BenchError("connect to port \(port): errno \(failure)")
    }
    var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

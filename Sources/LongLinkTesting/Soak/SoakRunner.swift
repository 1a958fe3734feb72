import LongLink
import LongLinkServer
import LongLinkTransport
import LongLinkWire

/// Something that happened during a soak run, for live output.
public enum SoakEvent: Sendable {
    /// A request ended: its number, whether it succeeded, what it failed with, how long it took.
    case request(number: Int, error: LongLinkError?, elapsed: Duration)
    /// The consumer received a reliable push.
    case push(seq: UInt64, payload: String)
    /// A fault was injected (or undone).
    case fault(String)
    /// The client's link changed state.
    case state(ConnectionState)
}

/// The field's own acceptance test, made rigorous: one task sends a request every 100 ms, another
/// consumes reliable pushes the server emits every 50 ms, and a third injects faults for the whole
/// run: cuts, resets, black holes longer than the heartbeat, one-byte writes, latency spikes, a
/// server restart, `GoAway(reconnect: true)` and a window of refused connections. The report says
/// whether anything hung, was lost, duplicated or executed twice.
///
/// The server restart is graceful (`GoAway`, in-flight replies sent): request de-duplication lives
/// in the server's memory, so exactly-once across a crash needs a de-duplication store that
/// survives the crash, which the in-memory one does not.
public struct SoakRunner: Sendable {
    /// The run's configuration.
    public var configuration: SoakConfiguration

    /// Creates a runner.
    public init(configuration: SoakConfiguration = SoakConfiguration()) {
        self.configuration = configuration
    }

    private static let principal = "soak"
    private static let topic = "alerts"

    /// Runs the soak and returns its report; `onEvent` sees every request, push, fault and state.
    public func run(onEvent: @escaping @Sendable (SoakEvent) -> Void = { _ in }) async throws -> SoakReport {
        let configuration = self.configuration
        let clock = ContinuousClock()
        let start = clock.now
        let memoryAtStart = ProcessMemory.residentBytes
        let executions = Locked<[String: Int]>([:])
        let store = InMemoryPushStore(capacityPerPrincipal: 1_000_000)

        var serverConfiguration = ServerConfiguration()
        serverConfiguration.drainTimeout = .seconds(2)
        serverConfiguration.shutdownRetryAfter = .milliseconds(50)
        serverConfiguration.minimumHeartbeat = .milliseconds(50)
        serverConfiguration.tls = configuration.serverTLS
        let harness = LongLinkTestServer(configuration: serverConfiguration, pushStore: { store }) {
            var router = Router()
            router.register("login") { payload, context in
                context.bind(principal: String(decoding: payload, as: UTF8.self))
                return []
            }
            router.register("work") { payload, _ in
                let key = String(decoding: payload, as: UTF8.self)
                executions.withLock { $0[key, default: 0] += 1 }
                return payload
            }
            return router
        }
        let serverAddress = try await harness.start()
        let proxy = FaultProxy(upstream: .tcp(host: serverAddress.host, port: serverAddress.port ?? 0))
        let proxyAddress = try await proxy.start()

        var clientConfiguration = ClientConfiguration(endpoints: [
            .tcp(host: proxyAddress.host, port: proxyAddress.port ?? 0)
        ])
        clientConfiguration.clientID = "soak-client"
        clientConfiguration.tls = configuration.clientTLS
        clientConfiguration.heartbeat = configuration.heartbeat
        clientConfiguration.backoff = configuration.backoff
        clientConfiguration.defaultTimeout = configuration.requestTimeout
        clientConfiguration.connectTimeout = .seconds(1)
        clientConfiguration.livenessProbeTimeout = .milliseconds(500)
        clientConfiguration.offlineQueueLimit = 10_000
        clientConfiguration.login = { session in
            _ = try await session.request("login", payload: Array(Self.principal.utf8))
        }
        let client = LongLinkClient(configuration: clientConfiguration)
        let alerts = client.pushes(topic: Self.topic)
        let runTask = Task { try await client.run() }
        let statesTask = Task {
            for await state in client.connectionStates { onEvent(.state(state)) }
        }

        let faultsEnd = configuration.injectsFaults ? configuration.duration - configuration.quietTail : .zero
        let recoveryStart = faultsEnd + configuration.backoff.maximum + .seconds(1)
        let outcomes = Locked<[Int: Outcome]>([:])
        let faultTimes = Locked<[Duration]>([])
        let emitted = Locked<Int>(0)

        // Reliable pushes: every pushInterval, through the server when one runs, straight into the
        // store (its persistence) while it restarts.
        let producer = Task {
            var number = 0
            while clock.now - start < configuration.duration {
                number += 1
                let payload = Array("push-\(number)".utf8)
                do {
                    if let server = harness.server {
                        _ = try server.push(to: Self.principal, topic: Self.topic, payload: payload)
                    } else {
                        _ = try store.append(principal: Self.principal, topic: Self.topic, payload: payload)
                    }
                    emitted.withLock { $0 = number }
                } catch {
                    number -= 1
                }
                try? await Task.sleep(for: configuration.pushInterval)
            }
        }

        let delivered = Locked<[UInt64]>([])
        let consumer = Task {
            for await push in alerts {
                delivered.withLock { $0.append(push.seq) }
                onEvent(.push(seq: push.seq, payload: String(decoding: push.payload, as: UTF8.self)))
            }
        }

        let faults = Task {
            guard configuration.injectsFaults else { return }
            await Self.injectFaults(
                until: faultsEnd, start: start, proxy: proxy, harness: harness, faultTimes: faultTimes,
                onEvent: onEvent)
        }

        // Requests: one every requestInterval, each in its own task so a slow one never delays the next.
        let requests = Task {
            await withTaskGroup(of: Void.self) { group in
                var number = 0
                while clock.now - start < configuration.duration {
                    number += 1
                    let current = number
                    let startedAt = clock.now - start
                    outcomes.withLock { $0[current] = Outcome(startedAt: startedAt) }
                    group.addTask {
                        let began = clock.now
                        var failure: LongLinkError?
                        do {
                            _ = try await client.request("work", payload: Array("req-\(current)".utf8))
                        } catch let error as LongLinkError {
                            failure = error
                        } catch {
                            failure = LongLinkError(code: .cancelled, message: "\(error)")
                        }
                        let elapsed = clock.now - began
                        outcomes.withLock {
                            $0[current]?.finished = clock.now - start
                            $0[current]?.elapsed = elapsed
                            $0[current]?.error = failure
                        }
                        onEvent(.request(number: current, error: failure, elapsed: elapsed))
                    }
                    try? await Task.sleep(for: configuration.requestInterval)
                }
            }
        }

        await faults.value
        await proxy.apply(.clear)
        _ = await producer.value
        // Requests get their deadline plus the slack to finish; later ones count as hung.
        _ = try? await Self.bounded(configuration.requestTimeout + configuration.hangSlack + .seconds(1)) {
            await requests.value
        }
        requests.cancel()
        // Every emitted push must arrive; give the link time to deliver the tail.
        let expected = emitted.withLock { $0 }
        let drainDeadline = clock.now.advanced(by: .seconds(15))
        while delivered.withLock({ Set($0).count }) < expected, clock.now < drainDeadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let statistics = await client.statistics
        client.shutdown()
        _ = await runTask.result
        consumer.cancel()
        _ = await consumer.value
        statesTask.cancel()
        await proxy.stop()
        await harness.stop()

        var report = SoakReport()
        report.elapsed = clock.now - start
        report.faultsInjected = faultTimes.withLock { $0.count }
        report.reconnects = statistics.reconnects
        report.leftPending = statistics.inFlight + statistics.queued
        let counted = executions.withLock { $0 }
        let finalOutcomes = outcomes.withLock { $0 }
        report.requestsSent = finalOutcomes.count
        for (number, outcome) in finalOutcomes {
            guard let elapsed = outcome.elapsed else {
                report.requestsHung += 1
                continue
            }
            if elapsed > configuration.requestTimeout + configuration.hangSlack { report.requestsHung += 1 }
            if let error = outcome.error {
                if error.code == .deadlineExceeded { report.requestsTimedOut += 1 } else { report.requestsFailed += 1 }
                // Without faults every request must succeed; with them, every one after the recovery point.
                if !configuration.injectsFaults || outcome.startedAt >= recoveryStart {
                    report.failuresAfterRecovery += 1
                }
            } else {
                report.requestsSucceeded += 1
                if counted["req-\(number)", default: 0] != 1 { report.requestsExecutedTwice += 1 }
            }
        }
        report.worstRecovery = Self.worstRecovery(faults: faultTimes.withLock { $0 }, outcomes: finalOutcomes)
        let seqs = delivered.withLock { $0 }
        report.pushesEmitted = expected
        report.pushesDelivered = Set(seqs).count
        report.pushesDuplicated = seqs.count - Set(seqs).count
        report.pushesLost = max(0, expected - Set(seqs.filter { $0 <= UInt64(expected) }).count)
        report.pushesOutOfOrder = zip(seqs, seqs.dropFirst()).filter { $0.0 >= $0.1 }.count
        report.residentBytesAtStart = memoryAtStart
        report.residentBytesAtEnd = ProcessMemory.residentBytes
        report.memoryGrowthLimit = configuration.memoryGrowthLimit
        return report
    }

    struct Outcome: Sendable {
        var startedAt: Duration
        var finished: Duration?
        var elapsed: Duration?
        var error: LongLinkError?
    }

    /// The faults, in a cycle of about 50 seconds repeated until `end`.
    private static func injectFaults(
        until end: Duration, start: ContinuousClock.Instant, proxy: FaultProxy, harness: LongLinkTestServer,
        faultTimes: Locked<[Duration]>, onEvent: @escaping @Sendable (SoakEvent) -> Void
    ) async {
        let clock = ContinuousClock()
        enum Step {
            case network(NetworkFault, hold: Duration?, String)
            case restartServer
            case goAway
            case refuseAndCut(Duration)
        }
        let cycle: [(Duration, Step)] = [
            (.seconds(3), .network(.cut, hold: nil, "cut both sides")),
            (.seconds(4), .network(.reset, hold: nil, "reset both sides")),
            (.seconds(4), .network(.blackHole(.both), hold: .milliseconds(1_500), "black hole for 1.5 s")),
            (.seconds(3), .network(.splitWrites(into: 1), hold: .seconds(3), "one-byte writes for 3 s")),
            (
                .seconds(4),
                .network(
                    .latency(.milliseconds(250), jitter: .milliseconds(50)), hold: .seconds(3),
                    "latency 250±50 ms for 3 s")
            ),
            (.seconds(4), .restartServer),
            (.seconds(5), .goAway),
            (.seconds(4), .refuseAndCut(.seconds(2))),
            (.seconds(4), .network(.blackHole(.upstream), hold: .seconds(1), "upstream black hole for 1 s")),
            (
                .seconds(4),
                .network(.mergeWrites(window: .milliseconds(20)), hold: .seconds(2), "merged writes for 2 s")
            ),
        ]
        func elapsed() -> Duration { clock.now - start }
        func record(_ text: String) {
            faultTimes.withLock { $0.append(elapsed()) }
            onEvent(.fault(text))
        }
        var index = 0
        while true {
            let (gap, step) = cycle[index % cycle.count]
            index += 1
            guard elapsed() + gap < end else { return }
            do { try await Task.sleep(for: gap) } catch { return }
            switch step {
            case .network(let fault, let hold, let text):
                await proxy.apply(fault)
                record(text)
                if let hold, let reversal = fault.reversal {
                    try? await Task.sleep(for: min(hold, max(.zero, end - elapsed())))
                    await proxy.apply(reversal)
                    onEvent(.fault("undo: \(text)"))
                }
            case .restartServer:
                record("server restart")
                _ = try? await harness.restart(.graceful)
            case .goAway:
                record("GoAway(reconnect: true)")
                harness.server?.goAwayAll(
                    reason: "soak: rolling restart", reconnect: true, retryAfter: .milliseconds(50))
            case .refuseAndCut(let window):
                await proxy.apply(.refuseConnections(for: nil))
                await proxy.apply(.cut)
                record("refuse connections for \(window), then cut")
                try? await Task.sleep(for: window)
                await proxy.apply(.acceptConnections)
                onEvent(.fault("undo: accept connections"))
            }
        }
    }

    private static func worstRecovery(faults: [Duration], outcomes: [Int: Outcome]) -> Duration {
        let successes = outcomes.values.compactMap { $0.error == nil ? $0.finished : nil }.sorted()
        var worst = Duration.zero
        for fault in faults {
            guard let next = successes.first(where: { $0 > fault }) else { continue }
            worst = max(worst, next - fault)
        }
        return worst
    }

    private static func bounded<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T) async throws
        -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let value = try await group.next() ?? nil else { throw CancellationError() }
            return value
        }
    }
}

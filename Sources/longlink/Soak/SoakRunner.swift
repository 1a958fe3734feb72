import LongLinkCore
import Foundation
import LongLink
import LongLinkServer
import LongLinkTesting
import LongLinkTransport
import LongLinkWire

/// Something that happened during a soak run, for live output.
enum SoakEvent: Sendable {
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
/// server restart, `GoAway(reconnect: true)`, a window of refused connections, a NAT that forgets
/// idle mappings and, with ``SoakConfiguration/credentialLifetime``, a kick for good ("logged in
/// elsewhere": the app logs in again through its credential provider) and a credential expiry
/// (the client logs in again with a new credential; none presents an expired one). The report says
/// whether anything hung, was lost, duplicated or executed twice.
///
/// With one server, its restart is graceful (`GoAway`, in-flight replies sent): request
/// de-duplication lives in the server's memory, so exactly-once across a crash needs a
/// de-duplication store that survives the crash, which the in-memory one does not. With
/// ``SoakConfiguration/fleet``, the servers share their stores, the client knows every server, and
/// the schedule crashes the server the client is on and restarts it: a request caught by a crash
/// may time out, and none may run twice. With ``SoakConfiguration/dataDirectory`` the server is a
/// `serve --data-dir` child process that the schedule kills with SIGKILL and starts again on its
/// durable store: every push whose `emit` was answered arrives once, and no `count` runs twice.
struct SoakRunner: Sendable {
    /// The run's configuration.
    var configuration: SoakConfiguration

    /// Creates a runner.
    init(configuration: SoakConfiguration = SoakConfiguration()) {
        self.configuration = configuration
    }

    /// Runs the soak and returns its report; `onEvent` sees every request, push, fault and state.
    func run(onEvent: @escaping @Sendable (SoakEvent) -> Void = { _ in }) async throws -> SoakReport {
        let configuration = self.configuration
        let clock = ContinuousClock()
        let start = clock.now
        let memoryAtStart = ProcessMemory.residentBytes
        if configuration.fleet != nil, configuration.dataDirectory != nil {
            throw LongLinkError(
                code: .invalidConfiguration, message: "a soak runs on a fleet or on a data directory, not both")
        }
        if let fleet = configuration.fleet, fleet.servers < 2 {
            throw LongLinkError(
                code: .invalidConfiguration, message: "a soak fleet needs at least 2 servers, not \(fleet.servers)")
        }
        let credentials = configuration.credentialLifetime.map { SoakCredentials(lifetime: $0) }
        let servers = try await SoakServers.start(configuration, credentials: credentials)

        var clientConfiguration = ClientConfiguration(endpoints: servers.endpoints)
        clientConfiguration.clientID = "soak-client"
        clientConfiguration.tls = configuration.clientTLS
        clientConfiguration.heartbeat = configuration.heartbeat
        clientConfiguration.backoff = configuration.backoff
        clientConfiguration.defaultTimeout = configuration.requestTimeout
        clientConfiguration.connectTimeout = .seconds(1)
        clientConfiguration.livenessProbeTimeout = .milliseconds(500)
        clientConfiguration.offlineQueueLimit = 10_000
        clientConfiguration.balancing.probeTimeout = .seconds(1)
        Self.configureSessions(&clientConfiguration, credentials: credentials, sendsToken: servers.child == nil)
        let client = LongLinkClient(configuration: clientConfiguration)
        // One push stream per session: a kick for good ends one, the next login makes the next.
        let (streams, nextStream) = AsyncStream.makeStream(of: AsyncStream<Push>.self)
        nextStream.yield(client.pushes(topic: SoakServers.topic))
        let relogins = Task {
            await Self.keepLoggingIn(client, sendsToken: servers.child == nil, streams: nextStream)
        }
        let runTask = Task { try await client.run() }
        let statesTask = Task {
            for await state in client.connectionStates { onEvent(.state(state)) }
        }

        let faultsEnd = configuration.injectsFaults ? configuration.duration - configuration.quietTail : .zero
        let recoveryStart = faultsEnd + configuration.backoff.maximum + .seconds(1)
        let ledger = Locked(
            SoakLedger(
                hangAfter: configuration.requestTimeout + configuration.hangSlack,
                recoveryStart: configuration.injectsFaults ? recoveryStart : .zero))
        // The seqs stored: a push the store refused (a fleet's store out of reach) is not counted.
        let emitted = Locked<[UInt64]>([])

        // Reliable pushes: every pushInterval, through a running server, or straight into the
        // single server's store (its persistence) while it restarts.
        let producer = Task {
            var number = 0
            while clock.now - start < configuration.duration {
                number += 1
                // A child server is reached over the network only: its `emit` (the request
                // de-duplicated like any other) stores the push and answers its seq.
                let produced =
                    servers.child == nil
                    ? try? await servers.produce(Array("push-\(number)".utf8)) : try? await Self.emit(on: client)
                if let seq = produced {
                    emitted.withLock { $0.append(seq) }
                }
                try? await Task.sleep(for: configuration.pushInterval)
            }
        }

        let delivered = Locked<[Delivery]>([])
        let consumer = Task {
            var session = 0
            for await alerts in streams {
                session += 1
                for await push in alerts {
                    delivered.withLock { $0.append(Delivery(seq: push.seq, session: session)) }
                    onEvent(.push(seq: push.seq, payload: String(decoding: push.payload, as: UTF8.self)))
                }
            }
        }

        let faults = Task {
            guard configuration.injectsFaults else { return }
            await Self.injectFaults(
                until: faultsEnd, start: start, servers: servers, credentials: credentials, ledger: ledger,
                onEvent: onEvent)
        }

        // The baseline memory sample, once start-up and the first faults have settled.
        let memoryAtBaseline = Locked<SoakMemorySample?>(nil)
        let baselineTime = min(configuration.memoryBaselineTime, configuration.duration / 2)
        let sampler = Task {
            guard (try? await Task.sleep(until: start.advanced(by: baselineTime), clock: clock)) != nil else { return }
            let sample = SoakMemorySample.now(elapsed: clock.now - start)
            memoryAtBaseline.withLock { $0 = sample }
            configuration.onMemorySample?(sample)
        }

        // Requests: one every requestInterval, each in its own task so a slow one never delays the next.
        let requestTasks = SoakTasks()
        let requests = Task {
            var number = 0
            while clock.now - start < configuration.duration {
                number += 1
                let current = number
                ledger.withLock { $0.started(current, at: clock.now - start) }
                requestTasks.spawn {
                    let began = clock.now
                    let key = "req-\(current)"
                    var failure: LongLinkError?
                    var counted: Int?
                    do {
                        if servers.child == nil {
                            _ = try await client.request("work", payload: Array(key.utf8))
                        } else {
                            counted = try Self.runs(in: try await client.request("count", payload: Array("{}".utf8)))
                        }
                    } catch let error as LongLinkError {
                        failure = error
                    } catch {
                        failure = LongLinkError(code: .cancelled, message: "\(error)")
                    }
                    let elapsed = clock.now - began
                    let runs = counted ?? servers.runs(of: key)
                    ledger.withLock {
                        $0.finished(current, at: clock.now - start, elapsed: elapsed, error: failure, runs: runs)
                    }
                    onEvent(.request(number: current, error: failure, elapsed: elapsed))
                }
                try? await Task.sleep(for: configuration.requestInterval)
            }
        }

        await faults.value
        for proxy in servers.proxies { await proxy.apply(.clear) }
        _ = await producer.value
        // Requests get their deadline plus the slack to finish; later ones count as hung.
        _ = try? await Self.bounded(configuration.requestTimeout + configuration.hangSlack + .seconds(1)) {
            await requests.value
            await requestTasks.waitForAll()
        }
        requests.cancel()
        requestTasks.cancelAll()
        // Every emitted push must arrive; give the link time to deliver the tail.
        let expected = Set(emitted.withLock { $0 })
        let drainDeadline = clock.now.advanced(by: .seconds(15))
        while !expected.isSubset(of: delivered.withLock({ Set($0.map(\.seq)) })), clock.now < drainDeadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        sampler.cancel()
        // The load has ended; what the client, the servers and the runner hold now is what a
        // longer run would hold too, unless something grows.
        let memoryAtEnd = SoakMemorySample.now(elapsed: clock.now - start)
        let statistics = await client.statistics
        client.shutdown()
        _ = await runTask.result
        relogins.cancel()
        nextStream.finish()
        consumer.cancel()
        _ = await consumer.value
        statesTask.cancel()
        await servers.stop()

        var report = SoakReport()
        report.elapsed = clock.now - start
        report.reconnects = statistics.reconnects
        report.leftPending = statistics.inFlight + statistics.queued
        let account = ledger.withLock { $0 }
        report.faultsInjected = account.faults
        report.primariesKilled = configuration.fleet?.killPrimary == nil ? nil : account.primariesKilled
        report.requestsAcrossFailovers = account.failovers.requests
        report.requestsAnsweredAcrossFailovers = account.failovers.answered
        report.requestsSent = account.sent
        report.requestsSucceeded = account.succeeded
        report.requestsTimedOut = account.timedOut
        report.requestsFailed = account.failed
        report.requestsHung = account.hung
        report.failuresAfterRecovery = account.failuresAfterRecovery
        report.worstRecovery = account.worstRecovery
        // Answered OK, a request ran once; failed, at most once (a crash or a cut may have stopped it).
        report.requestsExecutedTwice =
            account.succeededWithoutRunning + servers.executions.values.count(where: { $0 > 1 })
        let pushes = Self.pushCounts(delivered.withLock { $0 })
        report.pushesEmitted = expected.count
        report.pushesDelivered = pushes.distinct.count
        report.pushesDuplicated = pushes.duplicated
        report.pushesRedeliveredAfterKick = pushes.redeliveredAfterKick
        report.pushesLost = expected.subtracting(pushes.distinct).count
        report.pushesOutOfOrder = pushes.outOfOrder
        report.relogins = await relogins.value
        if let account = credentials?.account {
            report.credentials = SoakReport.Credentials(
                logins: account.logins, refreshes: account.refreshes, staleLogins: account.staleLogins)
        }
        report.residentBytesAtStart = memoryAtStart
        report.residentBytesAtEnd = ProcessMemory.residentBytes
        report.memoryGrowthLimit = configuration.memoryGrowthLimit
        report.memoryAtBaseline = memoryAtBaseline.withLock { $0 }
        report.memoryAtEnd = memoryAtEnd
        report.memoryGrowthAfterBaselineLimit = configuration.memoryGrowthAfterBaselineLimit
        return report
    }

    /// One reliable push on the soak's topic through a child server's `emit`; its seq.
    private static func emit(on client: LongLinkClient) async throws -> UInt64 {
        let reply = try await client.request(
            "emit", payload: Array(#"{"topic":"\#(SoakServers.topic)","n":1,"reliable":true}"#.utf8))
        guard let object = try? JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any],
            let seq = object["first_seq"] as? Int
        else {
            throw LongLinkError(code: .internalError, message: "emit replied without first_seq")
        }
        return UInt64(seq)
    }

    /// The `runs` of a `count` reply: 1 for a request that ran once, replayed or not.
    private static func runs(in reply: [UInt8]) throws -> Int {
        guard let object = try? JSONSerialization.jsonObject(with: Data(reply)) as? [String: Any],
            let runs = object["runs"] as? Int
        else {
            throw LongLinkError(code: .internalError, message: "count replied without runs")
        }
        return runs
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

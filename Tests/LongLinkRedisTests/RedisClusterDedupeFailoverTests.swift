import LongLinkServer
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkRedis

/// `Request.resent` on a Redis Cluster with `.asynchronous` durability: a copy whose de-dup entry
/// may have been lost in a primary's failover is answered `UNKNOWN` (`OUTCOME_UNKNOWN`), never run
/// a second time. The loss is real, produced as in ``RedisClusterFailoverTests``.
@Suite(
    .sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled),
    .timeLimit(.minutes(10)))
struct RedisClusterDedupeFailoverTests {
    typealias Failover = RedisClusterFailoverTests

    /// A raw connection to fleet server `index` (no proxy), past its handshake as `clientID` and
    /// logged in as `principal` with request `loginID`.
    static func connect(
        _ fleet: RedisFleet, _ index: Int, as clientID: String, principal: String, loginID: String
    ) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: try await fleet.server(index).localAddress)
        _ = try await client.handshake(clientID: clientID)
        // A login refused UNAVAILABLE (its entry's slot between two primaries) did not run: sent again.
        _ = try await Failover.retrying("the login of \(clientID)") {
            let login = try await client.call("login", principal, id: loginID)
            guard login.status == nil else { throw ConditionTimedOut(what: "a login answered OK, not \(login)") }
            return login
        }
        return client
    }

    /// Sends `slow(payload)` as request `id`, marked `resent` or not, and returns its response.
    static func send(
        _ client: FrameClient, _ payload: String, id: String, resent: Bool
    ) async throws -> Frame.Response {
        var request = Frame.Request(requestID: id, method: "slow", payload: Array(payload.utf8))
        request.resent = resent
        try await client.send(.request(request))
        let frame = try await client.take("the response to \(id)", within: .seconds(20)) {
            if case .response(let response) = $0 { response.requestID == id } else { false }
        }
        guard case .response(let response) = frame else {
            throw FrameClient.UnexpectedEvent(event: .frame(frame), expected: id)
        }
        return response
    }

    /// Sends as ``send(_:_:id:resent:)`` until the answer is not `UNAVAILABLE` (bounded): the
    /// servers' first commands after a failover may still meet the dead primary, and a request
    /// answered so did not run.
    static func sendPastFailover(
        _ client: FrameClient, _ payload: String, id: String, resent: Bool
    ) async throws -> Frame.Response {
        try await Failover.retrying("an answer to \(id) past the failover") {
            let response = try await send(client, payload, id: id, resent: resent)
            guard response.status?.code != .unavailable else { throw ConditionTimedOut(what: "the store reachable") }
            return response
        }
    }

    static func isOutcomeUnknown(_ response: Frame.Response) -> Bool {
        response.status?.code == .unknown && response.status?.detail == Frame.Status.outcomeUnknownDetail
    }

    /// Request 10 runs on s0 while the replica of its principal's shard is cut off: its claim and
    /// stored reply reach only the primary, which is then killed; the replica takes over without
    /// them. Its copy marked resent, on s1, is answered `UNKNOWN` / `OUTCOME_UNKNOWN` and does not
    /// run; a further copy, on s2 (whose own window never saw it), gets the same answer from the
    /// store. The handler ran once in all. A new request after the failover runs as usual.
    ///
    /// The handler's `slow` counts a run in the cluster before it tells it: a run whose count
    /// failed (its key's primary gone) ends in an error reply, which the test would see.
    @Test func aResentCopyWhoseEntryWasLostInAFailoverIsAnsweredUnknown() async throws {
        try await withRedisCluster { cluster in
            let fleet = try await RedisFleet.start(onCluster: cluster, count: 3, slowFor: .milliseconds(10))
            let principal = "lost"
            let shard = try await Failover.shard(of: principal, in: cluster)
            let keys = RedisKeys(prefix: fleet.prefix)
            let first = try await Self.connect(fleet, 0, as: "phone", principal: principal, loginID: "1")
            // A request of the principal before the cut: its lineage record reaches the replica.
            #expect(try await first.call("server", "", id: "2").payload == bytes("s0"))
            try await Failover.cutReplicaOff(shard, in: cluster, filling: keys.tag(principal: principal))

            let ran = try await Self.send(first, "once", id: "10", resent: false)
            #expect(ran.status == nil && ran.payload == bytes("s0"), "\(ran)")
            let entry = keys.dedupe(principal: principal, clientID: "phone", requestID: "10")
            try await eventually("the reply is stored on the primary", within: .seconds(10)) {
                let held = try? await cluster.run(RedisCommand("GET", entry), on: shard.primary)
                return held?.bytes?.first == UInt8(ascii: "D")
            }
            first.close()
            try await Failover.failOver(shard, in: cluster)
            let survived = try await cluster.run(RedisCommand("EXISTS", entry), on: shard.replica)
            try #require(survived.int64 == 0, "the replica was not behind: it has the entry")
            let record = keys.dedupeLineage(principal: principal)
            let kept = try await cluster.run(RedisCommand("EXISTS", record), on: shard.replica)
            try #require(kept.int64 == 1, "the lineage record written before the cut is gone")

            // The handler's counts reach their keys' primaries again before any request is sent: a
            // count's error would be the request's stored reply, hiding whether it ran.
            _ = try await Failover.retrying("the counts readable") {
                (try await fleet.runs("once"), try await fleet.runs("after"))
            }
            let second = try await Self.connect(fleet, 1, as: "phone", principal: principal, loginID: "3")
            let copy = try await Self.sendPastFailover(second, "once", id: "10", resent: true)
            #expect(Self.isOutcomeUnknown(copy), "\(copy)")
            let third = try await Self.connect(fleet, 2, as: "phone", principal: principal, loginID: "4")
            let again = try await Self.sendPastFailover(third, "once", id: "10", resent: true)
            #expect(Self.isOutcomeUnknown(again), "\(again)")

            let fresh = try await Self.sendPastFailover(second, "after", id: "11", resent: false)
            #expect(fresh.status == nil && fresh.payload == bytes("s1"), "\(fresh)")
            // The runs as the handlers tell them in this process (each before its reply): the count
            // the handler keeps in the cluster may itself sit on the killed primary and be lost.
            var started: [String] = []
            for _ in 0..<fleet.events.count { started.append(try await fleet.events.next(within: .seconds(1))) }
            #expect(started == ["started once on s0", "started after on s1"], "\(started)")
            second.close()
            third.close()
            await fleet.stop()
        }
    }

    /// The claim script's rule without a failover: a principal's lineage record starts (or, lost,
    /// starts again) a window during which a resent copy with no entry is answered `UNKNOWN`, and
    /// keeps answering so; once the record's last change is a window old such a copy runs. Copies
    /// not marked resent always run. With `.replicated(1)` nothing is checked.
    @Test func aResentCopyWithNoEntryRunsOnceTheLineageIsAWindowOld() async throws {
        try await withRedisCluster { cluster in
            // Long enough that the copies right after the first claim fall inside it on a loaded
            // machine (at 300 ms a full test run beside other work saw the window pass first).
            let window = Duration.seconds(2)
            let store = try RedisDedupeStore(cluster: cluster.seeds)
            func begin(_ id: String, resent: Bool) async throws(LongLinkError) -> DedupeClaim {
                try await store.begin(
                    DedupeClaimRequest(
                        principal: "p", clientID: "c", requestID: id, runningFor: .seconds(30), resent: resent,
                        window: window))
            }
            func isUnknown(_ id: String) async -> Bool {
                do throws(LongLinkError) {
                    _ = try await begin(id, resent: true)
                    return false
                } catch {
                    return error.code == .outcomeUnknown
                }
            }
            // The first claim of the principal writes its record: nothing proves older entries kept.
            #expect(try await Failover.retrying("a first claim") { try await begin("1", resent: false) } == .run)
            #expect(await isUnknown("2"))
            #expect(await isUnknown("2"), "a further copy was not answered the same")
            var attempt = 2
            try await eventually("a resent copy with no entry runs a window later", within: .seconds(10)) {
                attempt += 1
                return (try? await begin("\(attempt)", resent: true)) == .run
            }
            // The record lost (as in a failover that lost it): the window starts again.
            let record = store.keys.dedupeLineage(principal: "p")
            #expect(try await store.client.run(RedisCommand("DEL", record).keyed(1..<2)).int64 == 1)
            #expect(await isUnknown("x"))
            #expect(try await begin("y", resent: false) == .run)
            await store.shutdown()

            var seeds = cluster.seeds
            for index in seeds.indices { seeds[index].durability = .replicated(1) }
            let replicated = try RedisDedupeStore(cluster: seeds)
            let claim = try await replicated.begin(
                DedupeClaimRequest(
                    principal: "q", clientID: "c", requestID: "1", runningFor: .seconds(30), resent: true,
                    window: window))
            #expect(claim == .run)
            let unused = replicated.keys.dedupeLineage(principal: "q")
            #expect(try await replicated.client.run(RedisCommand("EXISTS", unused).keyed(1..<2)).int64 == 0)
            await replicated.shutdown()
        }
    }

    /// A principal idle for longer than two windows (nothing else of its slot written meanwhile)
    /// and nothing lost: its next resent copy that finds no entry runs. The lineage record is the
    /// slot's and never expires, so its absence still means lost writes, and idleness does not.
    /// (Idle time is the condition tested here: the wait is the scenario, not a synchronisation.)
    @Test func anIdlePrincipalsResentCopyRuns() async throws {
        try await withRedisCluster { cluster in
            let window = Duration.milliseconds(200)
            let store = try RedisDedupeStore(cluster: cluster.seeds)
            func begin(_ id: String, resent: Bool) async throws(LongLinkError) -> DedupeClaim {
                try await store.begin(
                    DedupeClaimRequest(
                        principal: "idle", clientID: "c", requestID: id, runningFor: .seconds(30), resent: resent,
                        window: window))
            }
            #expect(try await Failover.retrying("a first claim") { try await begin("1", resent: false) } == .run)
            // Each attempt a new request: a copy answered UNKNOWN leaves `UL` for its later copies.
            var attempt = 1
            try await eventually("a resent copy with no entry runs a window later", within: .seconds(10)) {
                attempt += 1
                return (try? await begin("\(attempt)", resent: true)) == .run
            }
            try await Task.sleep(for: window * 3)
            let record = store.keys.dedupeLineage(principal: "idle")
            #expect(try await store.client.run(RedisCommand("EXISTS", record).keyed(1..<2)).int64 == 1)
            #expect(try await begin("after the idle time", resent: true) == .run)
            await store.shutdown()
        }
    }

    /// A copy that waits while its request runs elsewhere, and whose running entry a failover then
    /// loses (the claim reached only the primary): its next look finds no entry. It takes the entry
    /// for lost, not given up, and gets `OUTCOME_UNKNOWN`; it never claims the request to run it
    /// a second time.
    @Test func aWaiterWhoseRunningEntryWasLostInAFailoverIsAnsweredUnknown() async throws {
        try await withRedisCluster { cluster in
            let principal = "awaited"
            let shard = try await Failover.shard(of: principal, in: cluster)
            let owner = try RedisDedupeStore(cluster: cluster.seeds)
            let waiter = try RedisDedupeStore(cluster: cluster.seeds)
            let window = Duration.seconds(60)
            func begin(_ store: RedisDedupeStore, _ id: String, resent: Bool) async throws -> DedupeClaim {
                try await store.begin(
                    DedupeClaimRequest(
                        principal: principal, clientID: "phone", requestID: id, runningFor: .seconds(60),
                        resent: resent,
                        window: window))
            }
            // A claim before the cut: its lineage record reaches the replica.
            #expect(try await begin(owner, "1", resent: false) == .run)
            try await Failover.cutReplicaOff(shard, in: cluster, filling: owner.keys.tag(principal: principal))
            #expect(try await begin(owner, "10", resent: false) == .run)
            #expect(try await begin(waiter, "10", resent: true) == .running)
            try await Failover.failOver(shard, in: cluster)
            let entry = owner.keys.dedupe(principal: principal, clientID: "phone", requestID: "10")
            let survived = try await cluster.run(RedisCommand("EXISTS", entry), on: shard.replica)
            try #require(survived.int64 == 0, "the replica was not behind: it has the running entry")

            // Looks made while the waiter's map still names the dead primary fail `unavailable`.
            var outcome: Result<DedupeClaim, LongLinkError> = .success(.running)
            try await eventually("the waiter's answer past the failover", within: .seconds(30)) {
                do throws(LongLinkError) {
                    outcome = .success(
                        try await waiter.awaitOutcome(
                            DedupeWaitRequest(
                                principal: principal, clientID: "phone", requestID: "10", runningFor: .seconds(60),
                                until: .now + .seconds(1))))
                    return (try? outcome.get()) != .running
                } catch {
                    outcome = .failure(error)
                    return error.code != .unavailable
                }
            }
            switch outcome {
            case .success(let claim):
                Issue.record("the waiter's claim after the failover was \(claim), not OUTCOME_UNKNOWN")
            case .failure(let error):
                #expect(
                    error.code == .outcomeUnknown && error.message == RedisDedupeStore.entryMayBeLost.message,
                    "\(error)")
            }
            await owner.shutdown()
            await waiter.shutdown()
        }
    }
}

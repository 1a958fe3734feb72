import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@testable import LongLink

@Suite("Pushes and acknowledgements", .sharedMachine)
struct ClientPushTests {
    private func loggedIn(
        _ endpoint: Endpoint, as user: String, clientID: String? = nil,
        _ adjust: (inout ClientConfiguration) -> Void = { _ in }
    )
        -> RunningClient
    {
        var configuration = ClientConfiguration.forTests(endpoint)
        if let clientID { configuration.clientID = clientID }
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        adjust(&configuration)
        return RunningClient(configuration)
    }

    @Test func reliablePushesArriveInOrderOnceAndAreAcked() async throws {
        let probe = Probe()
        let store = InMemoryPushStore()
        let server = try await RunningServer.start(probe: probe, store: store)
        let running = loggedIn(server.endpoint, as: "alice")
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...50 { try await server.server.push(to: "alice", topic: "alerts", payload: bytes("alert \(n)")) }
        var seen: [UInt64] = []
        for await push in alerts {
            #expect(text(push.payload) == "alert \(push.seq)")
            seen.append(push.seq)
            if seen.count == 50 { break }
        }
        #expect(seen == Array(1...50))
        try await eventually("every push is acknowledged") {
            server.server.statistics.acksReceived >= 50
        }
        // The server counts an Ack when it reads it and tells the store after: wait for the store.
        try await eventually("the store to drop every acknowledged push") {
            store.unacknowledgedCount(principal: "alice") == 0
        }
        await running.stop()
        try await server.stop()
    }

    @Test func pushesWaitForAConsumerAndAreNotAckedUntilTaken() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = loggedIn(server.endpoint, as: "carol")
        try await running.waitUntilConnected()
        for n in 1...3 { try await server.server.push(to: "carol", topic: "alerts", payload: bytes("\(n)")) }
        try await eventually("the pushes reached the client") { await running.client.statistics.pushesReceived == 3 }
        // Held, not acked: nobody took them yet.
        #expect(server.server.statistics.acksReceived == 0)
        var iterator = running.client.pushes(topic: "alerts").makeAsyncIterator()
        #expect(await iterator.next()?.seq == 1)
        try await eventually("the first is acked") { server.server.statistics.acksReceived == 1 }
        #expect(await iterator.next()?.seq == 2)
        #expect(await iterator.next()?.seq == 3)
        try await eventually("all are acked") { server.server.statistics.acksReceived == 3 }
        await running.stop()
        try await server.stop()
    }

    @Test func pushesMissedWhileOfflineArriveAfterReconnectWithoutDuplicates() async throws {
        let probe = Probe()
        let store = InMemoryPushStore()
        // The port stays the test's while the server is down.
        let port = try ReservedPort()
        defer { port.release() }
        var server = try await RunningServer.start(probe: probe, on: port, store: store)
        let running = loggedIn(server.endpoint, as: "dan")
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...5 { try await server.server.push(to: "dan", topic: "alerts", payload: bytes("\(n)")) }
        var iterator = alerts.makeAsyncIterator()
        for expected in 1...5 { #expect(await iterator.next()?.seq == UInt64(expected)) }
        // The server crashes and comes back with the same store; some pushes happen while down.
        server.server.abort()
        try await server.stop()
        for n in 6...8 { _ = try store.append(PushAppend(principal: "dan", topic: "alerts", payload: bytes("\(n)"))) }
        server = try await RunningServer.start(probe: probe, on: port, store: store)
        for expected in 6...8 { #expect(await iterator.next()?.seq == UInt64(expected)) }
        try await server.server.push(to: "dan", topic: "alerts", payload: bytes("9"))
        #expect(await iterator.next()?.seq == 9)
        // Redeliveries of 1...5 (unacked ones, if any ack was in flight at the crash) were dropped.
        try await eventually("the store drains") { store.unacknowledgedCount(principal: "dan") == 0 }
        await running.stop()
        try await server.stop()
    }

    /// A server process restarts with an empty in-memory store, which numbers from 1 again (in a
    /// new epoch): the client delivers the new pushes although it took the same seqs before, and
    /// the acks it owed the old store are dropped, not applied to the new one's seqs.
    @Test func aServerThatRestartsWithAnEmptyStoreDeliversItsNewPushes() async throws {
        let probe = Probe()
        let port = try ReservedPort()
        defer { port.release() }
        var server = try await RunningServer.start(probe: probe, on: port, store: InMemoryPushStore())
        // The acks of the first five wait (an hour, or 256 of them) and are still owed at the crash.
        let running = loggedIn(server.endpoint, as: "hal") { $0.ackDelay = .seconds(3_600) }
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...5 { try await server.server.push(to: "hal", topic: "alerts", payload: bytes("old \(n)")) }
        #expect(try await payloads(3, from: alerts) + payloads(2, from: alerts) == (1...5).map { "old \($0)" })
        server.server.abort()
        try await server.stop()
        let fresh = InMemoryPushStore()
        for n in 1...3 {
            _ = try fresh.append(PushAppend(principal: "hal", topic: "alerts", payload: bytes("new \(n)")))
        }
        server = try await RunningServer.start(probe: probe, on: port, store: fresh)
        #expect(try await payloads(3, from: alerts) == ["new 1", "new 2", "new 3"])
        #expect(await running.client.statistics.staleAcksDropped == 5)
        #expect(server.server.statistics.acksReceived == 0)
        #expect(fresh.unacknowledgedCount(principal: "hal") == 3)
        await running.stop()
        try await server.stop()
    }

    /// A batch of 20,000 acknowledgements leaves as two Acks: a server refuses one with more than
    /// 16,384 seqs (and closes the link over it).
    @Test func aLargeAckBatchIsSplitIntoFramesTheServerAccepts() async throws {
        let store = InMemoryPushStore(capacityPerPrincipal: 30_000)
        var configuration = ServerConfiguration.testing
        configuration.reliablePushWindow = 30_000
        let server = try await RunningServer.start(configuration, probe: Probe(), store: store)
        let running = loggedIn(server.endpoint, as: "ivy") {
            $0.ackBatchSize = 20_000
            $0.ackDelay = .seconds(3_600)
            $0.pushBufferLimit = 30_000
        }
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for _ in 0..<20_000 { try await server.server.push(to: "ivy", topic: "alerts", payload: []) }
        let taken = try await within(.seconds(30), "20,000 pushes") {
            var count = 0
            for await _ in alerts {
                count += 1
                if count == 20_000 { break }
            }
            return count
        }
        #expect(taken == 20_000)
        try await eventually("every push is acknowledged") { store.unacknowledgedCount(principal: "ivy") == 0 }
        #expect(await running.client.statistics.connects == 1)
        await running.stop()
        try await server.stop()
    }

    /// A reliable push the typed stream cannot decode is not lost without a word: it reaches the
    /// handler with the codec's error, is counted, and the stream goes on with the next push.
    @Test func anUndecodablePushReachesTheHandlerAndIsCounted() async throws {
        struct Alert: Codable, Sendable, Equatable { var price: Double }
        let server = try await RunningServer.start(probe: Probe())
        let undecodable = Mailbox<String>()
        let running = loggedIn(server.endpoint, as: "jo") {
            $0.undecodablePushHandler = { push, _ in undecodable.put(text(push.payload)) }
        }
        let alerts = running.client.pushes(topic: "alerts", as: Alert.self)
        try await running.waitUntilConnected()
        try await server.server.push(to: "jo", topic: "alerts", payload: bytes("not json"))
        try await server.server.push(to: "jo", topic: "alerts", payload: bytes(#"{"price":1.5}"#))
        let first = try await within(.seconds(20), "the decodable push") {
            var iterator = alerts.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(first == Alert(price: 1.5))
        #expect(try await undecodable.next() == "not json")
        try await eventually("the undecodable push is counted") {
            await running.client.statistics.undecodablePushes == 1
        }
        await running.stop()
        try await server.stop()
    }

    /// The payloads of the next `count` pushes `stream` hands over, as text, within 20 s.
    private func payloads(_ count: Int, from stream: AsyncStream<Push>) async throws -> [String] {
        try await within(.seconds(20), "\(count) pushes to arrive") {
            var payloads: [String] = []
            var iterator = stream.makeAsyncIterator()
            for _ in 0..<count { payloads.append(text(await iterator.next()?.payload ?? [])) }
            return payloads
        }
    }

    @Test func bestEffortPushesFlowWithoutAcks() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = loggedIn(server.endpoint, as: "erin")
        let quotes = running.client.pushes(topic: "quotes")
        try await running.waitUntilConnected()
        server.server.pushBestEffort(to: "erin", topic: "quotes", payload: bytes("AAPL 1"))
        var iterator = quotes.makeAsyncIterator()
        let quote = await iterator.next()
        #expect(quote?.seq == 0)
        #expect(quote?.isReliable == false)
        #expect(text(quote?.payload ?? []) == "AAPL 1")
        #expect(server.server.statistics.acksReceived == 0)
        await running.stop()
        try await server.stop()
    }

    @Test func aSlowConsumerDefersReliablePushesAndGetsThemAllInOrder() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = loggedIn(server.endpoint, as: "fay") { $0.pushBufferLimit = 8 }
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...40 { try await server.server.push(to: "fay", topic: "alerts", payload: bytes("\(n)")) }
        try await eventually("the consumer's buffer overflowed") {
            await running.client.statistics.reliablePushesDeferred > 0
        }
        var seen: [UInt64] = []
        for await push in alerts {
            seen.append(push.seq)
            if seen.count == 40 { break }
        }
        #expect(seen == Array(1...40))
        await running.stop()
        try await server.stop()
    }

    @Test func theTypedSequenceDecodesAndTheSequenceEndsWhenTheClientStops() async throws {
        struct Alert: Codable, Sendable, Equatable {
            var symbol: String
            var price: Double
        }
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = loggedIn(server.endpoint, as: "gus")
        let alerts = running.client.pushes(topic: "alerts", as: Alert.self)
        try await running.waitUntilConnected()
        try await server.server.push(to: "gus", topic: "alerts", payload: bytes("not json"))
        try await server.server.push(to: "gus", topic: "alerts", payload: bytes(#"{"symbol":"AAPL","price":190.5}"#))
        let consumer = Task {
            var received: [Alert] = []
            for await alert in alerts { received.append(alert) }
            return received
        }
        // With no undecodablePushHandler the undecodable one is a dead letter: taken, not handed over.
        try await eventually("the decodable push was taken, the other one counted") {
            let statistics = await running.client.statistics
            return statistics.pushesDelivered == 2 && statistics.undecodablePushes == 1
                && statistics.deadLetterPushes == 1
        }
        await running.stop()
        #expect(await consumer.value == [Alert(symbol: "AAPL", price: 190.5)])
        try await server.stop()
    }
}

@Suite("Push bookkeeping", .sharedMachine)
struct PushBookkeepingTests {
    @Test func theDeduplicatorRemembersDeliveredSeqsAcrossGaps() {
        var deduplicator = PushDeduplicator(capacity: 4)
        #expect(!deduplicator.wasDelivered(10))
        deduplicator.markDelivered(10)
        #expect(deduplicator.wasDelivered(10))
        #expect(!deduplicator.wasDelivered(3))  // never delivered here: a repeat is delivered, not dropped
        deduplicator.markDelivered(12)
        #expect(!deduplicator.wasDelivered(11))
        #expect(deduplicator.wasDelivered(12))
        deduplicator.markDelivered(11)
        #expect(deduplicator.runCount == 1)
        for seq in [20, 22, 24, 26, 28] as [UInt64] { deduplicator.markDelivered(seq) }
        // Over capacity: the lowest runs (10...12, then 20) are forgotten, memory stays bounded.
        #expect(deduplicator.runCount == 4)
        #expect(!deduplicator.wasDelivered(11) && !deduplicator.wasDelivered(20))
        #expect(deduplicator.wasDelivered(22) && deduplicator.wasDelivered(28))
    }

    @Test func backoffGrowsWithFullJitterUpToTheCap() {
        let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(2), multiplier: 2)
        #expect(backoff.bound(forAttempt: 0) == .milliseconds(100))
        #expect(backoff.bound(forAttempt: 3) == .milliseconds(800))
        #expect(backoff.bound(forAttempt: 10) == .seconds(2))
        #expect(backoff.bound(forAttempt: 1_000) == .seconds(2))
        #expect(backoff.delay(forAttempt: 3, random: 0.5) == .milliseconds(400))
        #expect(backoff.delay(forAttempt: 3, random: 0) == .zero)
        let fixed = Backoff(initial: .milliseconds(100), maximum: .seconds(2), jitter: false)
        #expect(fixed.delay(forAttempt: 2, random: 0.1) == .milliseconds(400))
    }

    /// Every impossible value is refused before the client starts, by a message naming its field.
    @Test(arguments: [
        "defaultTimeout", "connectTimeout", "heartbeat", "offlineQueueLimit", "offlineQueueBytes", "pushBufferLimit",
        "ackBatchSize", "endpoints", "clientID", "maxFrameBytes", "maxFrameBytes.max", "maxFrameBytes.over",
        "maxInflationRatio", "pushBufferBytes", "unacknowledgedPushBytes", "coalescedCallLimit", "coalescedCallBytes",
        "responseCache.maxEntries",
    ])
    func anImpossibleValueIsRefusedByName(field: String) {
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: 1)])
        switch field {
        case "defaultTimeout": configuration.defaultTimeout = .zero
        case "connectTimeout": configuration.connectTimeout = .milliseconds(-1)
        case "heartbeat": configuration.heartbeat = .microseconds(500)
        case "offlineQueueLimit": configuration.offlineQueueLimit = 0
        case "offlineQueueBytes": configuration.offlineQueueBytes = 0
        case "pushBufferLimit": configuration.pushBufferLimit = 0
        case "ackBatchSize": configuration.ackBatchSize = 0
        case "endpoints": configuration.endpoints = []
        case "clientID": configuration.clientID = ""
        // Int.max once trapped on `limit + 1` when a compressed payload arrived.
        case "maxFrameBytes.max": configuration.maxFrameBytes = .max
        case "maxFrameBytes.over": configuration.maxFrameBytes = (64 << 20) + 1
        case "maxInflationRatio": configuration.maxInflationRatio = 0
        case "pushBufferBytes": configuration.pushBufferBytes = 0
        case "unacknowledgedPushBytes": configuration.unacknowledgedPushBytes = 0
        case "coalescedCallLimit": configuration.coalescedCallLimit = 0
        case "coalescedCallBytes": configuration.coalescedCallBytes = 0
        case "responseCache.maxEntries": configuration.responseCache.maxEntries = 0
        default: configuration.maxFrameBytes = 0
        }
        do {
            try configuration.validate()
            Issue.record("\(field): an impossible value was accepted")
        } catch {
            #expect(error.code == .invalidConfiguration)
            let name = field.split(separator: ".").first.map(String.init) ?? field
            #expect(error.message.contains(name), "\(error.message)")
        }
    }

    @Test func configurationValidationIsTyped() {
        var configuration = ClientConfiguration(endpoints: [])
        #expect(throws: LongLinkError.self) { try configuration.validate() }
        configuration.endpoints = [.tcp(host: "127.0.0.1", port: 1)]
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.defaultTimeout = .zero
        do {
            try configuration.validate()
            Issue.record("zero timeout must be refused")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }
}

@Suite("Push delivery edge cases", .sharedMachine)
struct PushEdgeCaseTests {
    /// A server and a client logged in as `user`, connected.
    private func connected(as user: String) async throws -> (RunningServer, RunningClient) {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        return (server, running)
    }

    /// The seqs of the next `count` pushes `stream` hands over, within 20 s.
    private func seqs(_ count: Int, from stream: AsyncStream<Push>) async throws -> [UInt64] {
        try await within(.seconds(20), "a consumer to take \(count) pushes") {
            var seqs: [UInt64] = []
            var iterator = stream.makeAsyncIterator()
            for _ in 0..<count { seqs.append(await iterator.next()?.seq ?? 0) }
            return seqs
        }
    }

    @Test func aSeqTakenByOneConsumerDoesNotHideALowerOneAnotherNeverTook() {
        var deduplicator = PushDeduplicator()
        // Seq 1 is held by consumer A, not taken; consumer B took 2.
        deduplicator.markDelivered(2)
        #expect(!deduplicator.wasDelivered(1))  // A went away: 1 must be accepted when redelivered
        #expect(deduplicator.wasDelivered(2))
        deduplicator.markDelivered(1)
        #expect(deduplicator.runCount == 1 && deduplicator.wasDelivered(1))
    }

    @Test func aTopicNobodyReadsDoesNotStopTheOthers() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.pushBufferLimit = 4
        configuration.login = { session in _ = try await session.request("login", payload: bytes("ida")) }
        let running = RunningClient(configuration)
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...10 { try await server.server.push(to: "ida", topic: "unread", payload: bytes("\(n)")) }
        for n in 1...5 { try await server.server.push(to: "ida", topic: "alerts", payload: bytes("a\(n)")) }
        var iterator = alerts.makeAsyncIterator()
        var payloads: [String] = []
        for _ in 0..<5 { payloads.append(text(await iterator.next()?.payload ?? [])) }
        #expect(payloads == ["a1", "a2", "a3", "a4", "a5"])
        // The unread topic's pushes past the hold stayed with the server: a late consumer gets all ten.
        var unread = running.client.pushes(topic: "unread").makeAsyncIterator()
        var late: [String] = []
        for _ in 0..<10 { late.append(text(await unread.next()?.payload ?? [])) }
        #expect(late == (1...10).map { "\($0)" })
        await running.stop()
        try await server.stop()
    }

    @Test func pushesAConsumerNeverTookGoToTheNextConsumer() async throws {
        let (server, running) = try await connected(as: "jo")
        do {
            let abandoned = running.client.pushes(topic: "alerts")
            _ = abandoned.makeAsyncIterator()
            for n in 1...3 { try await server.server.push(to: "jo", topic: "alerts", payload: bytes("\(n)")) }
            try await eventually("the pushes reached the client") {
                await running.client.statistics.pushesReceived >= 3
            }
        }
        // The first consumer is gone without taking anything: nothing was acknowledged.
        #expect(server.server.statistics.acksReceived == 0)
        // Bounded: when the pushes never came, this test hung a whole suite run.
        #expect(try await seqs(3, from: running.client.pushes(topic: "alerts")) == [1, 2, 3])
        await running.stop()
        try await server.stop()
    }

    /// The next consumer may register before the one that never took its pushes is gone. They
    /// still reach it: the Sync goes out when the first consumer is removed, not only when a
    /// consumer arrives (otherwise this one would wait forever).
    @Test func pushesAConsumerNeverTookReachAConsumerThatRegisteredBeforeItLeft() async throws {
        let (server, running) = try await connected(as: "kai")
        let second: AsyncStream<Push>
        do {
            let first = running.client.pushes(topic: "alerts")
            for n in 1...3 { try await server.server.push(to: "kai", topic: "alerts", payload: bytes("\(n)")) }
            try await eventually("the pushes reached the first consumer") {
                await running.client.statistics.pushesReceived >= 3
            }
            second = running.client.pushes(topic: "alerts")
            // Only now the first consumer goes, without having taken anything.
            withExtendedLifetime(first) {}
        }
        #expect(try await seqs(3, from: second) == [1, 2, 3])
        #expect(server.server.statistics.acksReceived <= 3)
        await running.stop()
        try await server.stop()
    }

    @Test func aShutdownWhileConnectingEndsRun() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let release = Mailbox<Void>()
        let asked = Mailbox<Void>()
        var configuration = ClientConfiguration.forTests(server.endpoint)
        let endpoint = server.endpoint
        configuration.endpointProvider = {
            asked.put(())
            _ = try await release.next(within: .seconds(10), "the test to release the provider")
            return [endpoint]
        }
        let client = LongLinkClient(configuration: configuration)
        let run = Task { try await client.run() }
        _ = try await asked.next()
        client.shutdown()
        release.put(())
        // The link that comes up after the shutdown is refused: run() ends.
        try await within(.seconds(20), "run() to end") { try await run.value }
        #expect(await client.statistics.connects == 0)
        try await server.stop()
    }
}

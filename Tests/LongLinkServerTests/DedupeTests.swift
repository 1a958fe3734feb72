import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

@Suite("De-duplication", .sharedMachine)
struct DedupeTests {
    @Test func aResendAfterReconnectReplaysTheStoredReply() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            // Logged in: requests made before a login are not de-duplicated.
            let first = try await FrameClient.loggedIn(address, clientID: "phone-1")
            let original = try await first.call("count", bytes("+"), id: "42")
            #expect(original.text == "execution 1+")
            first.close()

            let second = try await FrameClient.loggedIn(address, clientID: "phone-1")
            let replayed = try await second.call("count", bytes("+"), id: "42")
            #expect(replayed == original)
            #expect(probe.executions.load(ordering: .relaxed) == 1)
            #expect(server.statistics.requestsReplayed == 1)

            // Another client may use the same request id: its own execution.
            let other = try await FrameClient.loggedIn(address, clientID: "phone-2")
            #expect(try await other.call("count", id: "42").text == "execution 2")
        }
    }

    @Test func aCopyArrivingWhileTheFirstRunsWaitsForTheSameResult() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let first = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await first.send(.request(Frame.Request(requestID: "7", method: "gated", payload: bytes("?"))))
            #expect(try await probe.events.next() == "started 7")
            // The link drops while the handler runs; the client resends on a new connection.
            first.close()
            let second = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await second.send(.request(Frame.Request(requestID: "7", method: "gated", payload: bytes("?"))))
            // Prove the copy joined (it did not start a second execution) before opening the gate.
            #expect(try await second.call("echo", id: "sync-point").requestID == "sync-point")
            #expect(server.statistics.requestsJoined == 1)
            probe.gate.put(())
            let reply = try await second.response()
            #expect(reply.requestID == "7")
            #expect(reply.text == "execution 1?")
            #expect(probe.executions.load(ordering: .relaxed) == 1)
            #expect(server.statistics.handlersStarted == 4)  // two logins, gated once, echo once
        }
    }

    /// Requests that arrive together in one read: batches with and without the Hello, and a batch
    /// of resends, must behave like requests that arrive one by one.
    @Test func requestsArrivingTogetherAreDeduplicatedLikeSingleOnes() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            func requests(_ prefix: String) -> [Frame] {
                (0..<12).map {
                    .request(Frame.Request(requestID: "\(prefix)\($0)", method: "count", payload: bytes("+")))
                }
            }
            func replies(_ client: FrameClient, _ count: Int) async throws -> [String: String] {
                var byID: [String: String] = [:]
                for _ in 0..<count {
                    let reply = try await client.response()
                    byID[reply.requestID] = reply.text
                }
                return byID
            }
            let first = try await FrameClient.connect(to: address)
            // Hello, an inline login and twelve requests in one write, then twelve more once the link
            // is open.
            let login = Frame.request(
                Frame.Request(requestID: "login-1", method: "login.sync", payload: bytes("alice")))
            try await first.sendRaw(encoded([.hello(Frame.Hello(clientID: "phone-1")), login] + requests("b")))
            let welcome = try await first.nextFrame()
            guard case .welcome = welcome else {
                Issue.record("expected Welcome, got \(welcome)")
                return
            }
            #expect(try await first.response().text == "welcome")
            var original = try await replies(first, 12)
            try await first.sendRaw(encoded(requests("c")))
            original.merge(try await replies(first, 12)) { a, _ in a }
            #expect(original.count == 24)
            #expect(probe.executions.load(ordering: .relaxed) == 24)
            first.close()

            let second = try await FrameClient.connect(to: address)
            _ = try await second.handshake(clientID: "phone-1")
            let again = Frame.request(
                Frame.Request(requestID: "login-2", method: "login.sync", payload: bytes("alice")))
            try await second.sendRaw(encoded([again] + requests("b") + requests("c")))
            #expect(try await second.response().text == "welcome")
            let replayed = try await replies(second, 24)
            #expect(replayed == original)
            #expect(probe.executions.load(ordering: .relaxed) == 24)
            #expect(server.statistics.requestsReplayed == 24)
        }
    }

    /// A synchronous handler runs inline, inside the batch of frames its request came in: its result
    /// must be in the window before the next frame is handled, so that a copy later in the same
    /// batch is replayed (not joined, not run), and a batch of resends on a new connection too.
    @Test func inlineResultsAreReplayedWithinAndAcrossBatches() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            func request(_ id: String) -> Frame {
                .request(Frame.Request(requestID: id, method: "count.sync", payload: bytes("+")))
            }
            func replies(_ client: FrameClient, _ count: Int) async throws -> [(String, String)] {
                var received: [(String, String)] = []
                for _ in 0..<count {
                    let reply = try await client.response()
                    received.append((reply.requestID, reply.text))
                }
                return received
            }
            let ids = (0..<12).map { "s\($0)" }
            let first = try await FrameClient.loggedIn(address, clientID: "phone-1")
            // Twelve requests and a copy of the fourth, in one write.
            try await first.sendRaw(encoded(ids.map(request) + [request("s3")]))
            let original = try await replies(first, 13)
            #expect(original.map(\.0) == ids + ["s3"])
            #expect(original[12].1 == original[3].1)
            #expect(probe.executions.load(ordering: .relaxed) == 12)
            #expect(server.statistics.requestsReplayed == 1)
            #expect(server.statistics.requestsJoined == 0)
            first.close()

            let second = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await second.sendRaw(encoded(ids.map(request)))
            let replayed = try await replies(second, 12)
            #expect(replayed.map(\.1) == original.prefix(12).map(\.1))
            #expect(probe.executions.load(ordering: .relaxed) == 12)
            #expect(server.statistics.requestsReplayed == 13)
        }
    }

    private func encoded(_ frames: [Frame]) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { frame.encodeDelimited(into: &bytes) }
        return bytes
    }

    @Test func withTheWindowOffEveryCopyRuns() async throws {
        var configuration = ServerConfiguration.testing
        configuration.dedupeWindow = .zero
        let probe = Probe()
        try await withServer(configuration, probe: probe) { _, address in
            let client = try await FrameClient.connect(to: address)
            let welcome = try await client.handshake(clientID: "c")
            #expect(welcome.dedupeWindowMilliseconds == 0)
            try await client.logIn(as: "alice")
            #expect(try await client.call("count", id: "1").text == "execution 1")
            #expect(try await client.call("count", id: "1").text == "execution 2")
        }
    }

    @Test func aTimedOutExecutionIsNotStored() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let client = try await FrameClient.loggedIn(address, clientID: "c")
            let timedOut = try await client.call("hang", id: "x", timeoutMilliseconds: 30)
            #expect(timedOut.status?.code == .deadlineExceeded)
            #expect(try await probe.events.next() == "started x")
            #expect(try await probe.events.next() == "cancelled x")
            // The same id runs again rather than replaying the timeout.
            try await client.send(.request(Frame.Request(requestID: "x", method: "hang", timeoutMilliseconds: 30)))
            #expect(try await probe.events.next() == "started x")
            #expect(try await client.response().status?.code == .deadlineExceeded)
        }
    }
}

@Suite("DedupeWindow state machine", .sharedMachine)
struct DedupeWindowTests {
    typealias Window = DedupeWindowProbe

    @Test func executeWaitReplayExpire() {
        var window = Window(window: .seconds(10), capacity: 10)
        let start = ContinuousClock.now
        #expect(window.arrive("a", waiter: 1, now: start) == "execute")
        #expect(window.arrive("a", waiter: 2, now: start) == "wait")
        #expect(window.finish("a", text: "reply", now: start) == [1, 2])
        #expect(window.arrive("a", waiter: 3, now: start.advanced(by: .seconds(9))) == "replay reply")
        #expect(window.arrive("a", waiter: 4, now: start.advanced(by: .seconds(11))) == "execute")
    }

    @Test func theCountBoundEvictsTheOldestFinished() {
        var window = Window(window: .seconds(100), capacity: 3)
        let now = ContinuousClock.now
        for key in ["a", "b", "c", "d"] {
            #expect(window.arrive(key, waiter: 0, now: now) == "execute")
            _ = window.finish(key, text: key, now: now)
        }
        #expect(window.count == 3)
        #expect(window.arrive("a", waiter: 0, now: now) == "execute")  // evicted
        #expect(window.arrive("d", waiter: 0, now: now) == "replay d")
    }

    @Test func oneClientCannotEvictAnothersEntries() {
        var window = Window(window: .seconds(100), capacity: 100, capacityPerClient: 3)
        let now = ContinuousClock.now
        #expect(window.arrive("v", client: "victim", waiter: 0, now: now) == "execute")
        _ = window.finish("v", text: "v", now: now)
        for index in 0..<50 {
            #expect(window.arrive("x\(index)", client: "flood", waiter: 0, now: now) == "execute")
            _ = window.finish("x\(index)", text: "x", now: now)
        }
        // The flood kept its last three; the victim's entry is still there.
        #expect(window.count == 4)
        #expect(window.arrive("v", client: "victim", waiter: 0, now: now) == "replay v")
        #expect(window.arrive("x49", client: "flood", waiter: 0, now: now) == "replay x")
        #expect(window.arrive("x46", client: "flood", waiter: 0, now: now) == "execute")
    }

    @Test func aFullWindowEvictsOnlyTheFinishingClientsOwnEntries() {
        var window = Window(window: .seconds(100), capacity: 4, capacityPerClient: 3)
        let now = ContinuousClock.now
        for id in ["v1", "v2"] {
            #expect(window.arrive(id, client: "victim", waiter: 0, now: now) == "execute")
            _ = window.finish(id, text: id, now: now)
        }
        for index in 0..<10 {
            #expect(window.arrive("x\(index)", client: "flood", waiter: 0, now: now) == "execute")
            _ = window.finish("x\(index)", text: "x", now: now)
        }
        #expect(window.count == 4)
        // A newcomer finds no room while the window is full: it is refused before it runs, and
        // evicts nobody.
        #expect(window.arrive("n1", client: "new", waiter: 0, now: now).hasPrefix("refuse"))
        #expect(window.arrive("v1", client: "victim", waiter: 0, now: now) == "replay v1")
        #expect(window.arrive("v2", client: "victim", waiter: 0, now: now) == "replay v2")
        #expect(window.count == 4)
    }

    /// A client's share is found by number from its slots: when its last entry goes, the number
    /// is given to the next new client with nothing of the old share's count or order.
    @Test func aFreedShareComesBackEmptyForTheNextClient() {
        var window = Window(window: .seconds(10), capacity: 100, capacityPerClient: 2)
        let now = ContinuousClock.now
        let aRan = window.store(["a1", "a2"], client: "a", now: now)
        #expect(aRan)
        // Both of a's entries expire as b arrives: a's share is freed and b gets its number.
        let later = now.advanced(by: .seconds(11))
        let bRan = window.store(["b1", "b2"], client: "b", now: later)
        #expect(bRan)
        #expect(window.count == 2)
        // a comes back with a share of its own: its entry evicts none of b's.
        #expect(window.arrive("a3", client: "a", waiter: 0, now: later) == "execute")
        _ = window.finish("a3", text: "a3", now: later)
        #expect(window.count == 3)
        for id in ["b1", "b2"] { #expect(window.arrive(id, client: "b", waiter: 0, now: later) == "replay \(id)") }
        #expect(window.arrive("a3", client: "a", waiter: 0, now: later) == "replay a3")
    }

    /// A running entry keeps its client's share while the client's finished entries expire, so
    /// that its finish counts against its own client, not a newcomer given a freed number.
    @Test func aRunningEntryKeepsItsClientsShare() {
        var window = Window(window: .seconds(10), capacity: 100, capacityPerClient: 2)
        let now = ContinuousClock.now
        #expect(window.arrive("r1", client: "r", waiter: 0, now: now) == "execute")
        _ = window.finish("r1", text: "r1", now: now)
        #expect(window.arrive("r2", client: "r", waiter: 0, now: now) == "execute")
        let running = window.lastRun
        let later = now.advanced(by: .seconds(11))
        let qRan = window.store(["q1", "q2"], client: "q", now: later)
        #expect(qRan)
        #expect(window.finish("r2", run: running, text: "r2", now: later) == [0])
        #expect(window.arrive("q1", client: "q", waiter: 0, now: later) == "replay q1")
        #expect(window.arrive("q2", client: "q", waiter: 0, now: later) == "replay q2")
        #expect(window.arrive("r2", client: "r", waiter: 0, now: later) == "replay r2")
        #expect(window.arrive("r1", client: "r", waiter: 0, now: later) == "execute")
    }

    @Test func anAbandonedExecutionRunsAgainAndALateFinishIsIgnored() {
        var window = Window(window: .seconds(100), capacity: 10)
        let now = ContinuousClock.now
        #expect(window.arrive("a", waiter: 1, now: now) == "execute")
        let firstRun = window.lastRun
        #expect(window.abandon("a") == [1])
        #expect(window.arrive("a", waiter: 2, now: now) == "execute")
        // The first, abandoned execution finishes late: it must not answer the second run's waiters.
        #expect(window.finish("a", run: firstRun, text: "stale", now: now) == [])
        #expect(window.finish("a", text: "fresh", now: now) == [2])
        #expect(window.arrive("a", waiter: 3, now: now) == "replay fresh")
    }

    /// Times are kept as nanoseconds inside the window: a window of centuries must saturate, not
    /// wrap around into the past and expire everything at once.
    @Test func aWindowOfCenturiesNeverExpires() {
        var window = Window(window: .seconds(Int64.max / 2), capacity: 10)
        let now = ContinuousClock.now
        #expect(window.arrive("a", waiter: 1, now: now) == "execute")
        #expect(window.finish("a", text: "kept", now: now) == [1])
        #expect(window.arrive("a", waiter: 2, now: now.advanced(by: .seconds(86_400 * 365))) == "replay kept")
    }

    @Test func anIDHeldForAnotherMethodIsAConflict() {
        var window = Window(window: .seconds(100), capacity: 10)
        let now = ContinuousClock.now
        #expect(window.arrive("a", method: "pay", waiter: 1, now: now) == "execute")
        #expect(window.arrive("a", method: "read", waiter: 2, now: now) == "conflict pay")
        #expect(window.finish("a", text: "paid", now: now) == [1])
        #expect(window.arrive("a", method: "read", waiter: 3, now: now) == "conflict pay")
        #expect(window.arrive("a", method: "pay", waiter: 4, now: now) == "replay paid")
    }

    @Test func keysOfAnotherPrincipalAreOtherKeys() {
        let key = DedupeKey(clientID: "phone-1", principal: "alice", requestID: "42")
        #expect(key != DedupeKey(clientID: "phone-1", principal: "bob", requestID: "42"))
        #expect(key != DedupeKey(clientID: "phone-1", requestID: "42"))
        #expect(key == DedupeKey(client: DedupeKey.Client("phone-1", principal: "alice"), requestID: "42"))
    }

    @Test func removingTheLastWaiterIsReported() {
        var window = Window(window: .seconds(100), capacity: 10)
        let now = ContinuousClock.now
        _ = window.arrive("a", waiter: 1, now: now)
        _ = window.arrive("a", waiter: 2, now: now)
        #expect(window.removeWaiter("a", 1) == false)
        #expect(window.removeWaiter("a", 2) == true)
    }
}

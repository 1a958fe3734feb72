import Foundation
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLink

@Suite("Response cache", .sharedMachine)
struct ResponseCacheTests {
    /// A directory of its own for one test's cache files (not created).
    static func scratch() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("longlink-cache-\(UUID().uuidString)").path
    }

    @Test func evictionIsByBytesLeastRecentlyUsedFirst() {
        var store = CacheStore(byteLimit: 3 * (100 + 1 + 1 + 64))
        let now = ContinuousClock.now
        for key in ["a", "b", "c"] {
            store.store(key, payload: [UInt8](repeating: 1, count: 100), method: "m", at: now)
        }
        #expect(store.count == 3)
        _ = store.lookup("a", maxAge: nil, now: now)  // a is now the most recent
        #expect(store.store("d", payload: [UInt8](repeating: 2, count: 100), method: "m", at: now) == ["b"])
        #expect(store.store("e", payload: [UInt8](repeating: 3, count: 200), method: "m", at: now) == ["c", "a"])
        #expect(Set(store.entries.keys) == ["d", "e"])
        #expect(store.bytes <= store.byteLimit)
        // Larger than the whole limit: not stored, nothing evicted.
        #expect(store.store("f", payload: [UInt8](repeating: 4, count: 1_000), method: "m", at: now) == [])
        #expect(store.entries["f"] == nil && store.count == 2)
    }

    @Test func maxAgeFollowsTheClientsClock() async {
        let clock = ManualClock()
        let cache = ResponseCache(configuration: .init(), clock: clock)
        cache.store("k", payload: [1], method: "m", principal: "")
        await clock.advance(by: .seconds(30))
        #expect(cache.lookup("k", maxAge: .seconds(60)) == [1])
        await clock.advance(by: .seconds(31))
        #expect(cache.lookup("k", maxAge: .seconds(60)) == nil)
        #expect(cache.lookup("k", maxAge: nil) == [1])
    }

    @Test func invalidationByKeyPrefixTopicAndPrincipal() {
        let cache = ResponseCache(configuration: .init(), clock: SystemClock())
        cache.principal = "alice"
        cache.store("room.42", payload: [1], method: "room.enter", principal: "alice")
        cache.store(
            ResponseCache.key(method: "prices.AAPL", payload: [9], explicit: nil), payload: [2], method: "prices.AAPL",
            principal: "alice")
        cache.store(
            ResponseCache.key(method: "prices.MSFT", payload: [9], explicit: nil), payload: [3], method: "prices.MSFT",
            principal: "alice")
        cache.store("news", payload: [4], method: "news.latest", principal: "alice")
        cache.invalidate(key: "room.42")
        #expect(cache.lookup("room.42", maxAge: nil) == nil)
        cache.invalidate(topic: "prices.AAPL")
        #expect(cache.count == 2)
        cache.invalidate(keyPrefix: "prices.")
        #expect(cache.count == 1)
        cache.principal = "alice"
        #expect(cache.count == 1)
        cache.principal = "bob"
        #expect(cache.count == 0)
    }

    @Test func entriesPersistForANewInstanceOfTheSamePrincipalOnly() {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = ResponseCacheConfiguration(directory: directory)
        let first = ResponseCache(configuration: configuration, clock: SystemClock())
        first.principal = "alice"
        first.store("candles.AAPL", payload: [1, 2, 3], method: "candles", principal: "alice")
        let second = ResponseCache(configuration: configuration, clock: SystemClock())
        #expect(second.lookup("candles.AAPL", maxAge: nil) == nil)  // anonymous: not alice's
        second.principal = "alice"
        #expect(second.lookup("candles.AAPL", maxAge: nil) == [1, 2, 3])
        let third = ResponseCache(configuration: configuration, clock: SystemClock())
        third.principal = "bob"
        let fourth = ResponseCache(configuration: configuration, clock: SystemClock())
        fourth.principal = "alice"
        #expect(fourth.lookup("candles.AAPL", maxAge: nil) == nil)  // bob's login cleared the disk
    }

    @Test func corruptOrTruncatedFilesAreIgnoredAndRemoved() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = ResponseCacheConfiguration(directory: directory)
        let writer = ResponseCache(configuration: configuration, clock: SystemClock())
        for key in ["a", "b", "c"] {
            writer.store(key, payload: Array(repeating: 7, count: 64), method: "m", principal: writer.principal)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".entry") }
            .sorted()
        #expect(files.count == 3)
        let urls = files.map { URL(fileURLWithPath: directory).appendingPathComponent($0) }
        var flipped = try Data(contentsOf: urls[0])
        flipped[flipped.count / 2] ^= 0xff
        try flipped.write(to: urls[0])
        let whole = try Data(contentsOf: urls[1])
        try whole.prefix(whole.count - 5).write(to: urls[1])
        try Data().write(to: urls[2])
        let reader = ResponseCache(configuration: configuration, clock: SystemClock())
        for key in ["a", "b", "c"] { #expect(reader.lookup(key, maxAge: nil) == nil) }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".entry") }
        #expect(left.isEmpty)
        #expect(CacheFiles.parse([]) == nil)
    }
}

@Suite("Cache policies and coalescing, end to end", .sharedMachine)
struct CachePolicyTests {
    private func client(_ endpoint: Endpoint, _ adjust: (inout ClientConfiguration) -> Void = { _ in }) -> RunningClient
    {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.login = { session in
            _ = try await session.request("login", payload: bytes("wes"))
            session.loggedIn(as: "wes")
        }
        adjust(&configuration)
        return RunningClient(configuration)
    }

    private func options(_ policy: CachePolicy, key: String? = nil, timeout: Duration? = nil) -> RequestOptions {
        var options = RequestOptions(timeout: timeout)
        options.cache = policy
        options.cacheKey = key
        return options
    }

    @Test func everyPolicy() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = client(server.endpoint)
        try await running.waitUntilConnected()
        let client = running.client
        // Network only: never stored.
        _ = try await client.request("count", payload: bytes("a"))
        #expect(client.cache.count == 0)
        // Cache only with nothing stored: notFound, no round trip.
        let missing = await #expect(throws: LongLinkError.self) {
            try await client.request("count", payload: bytes("a"), options: options(.cacheOnly()))
        }
        #expect(missing?.code == .notFound && probe.executions.load(ordering: .relaxed) == 1)
        // Cache first: one execution, then hits.
        let first = try await client.request(
            "count", payload: bytes("a"), options: options(.cacheFirst(maxAge: .seconds(60))))
        let second = try await client.request(
            "count", payload: bytes("a"), options: options(.cacheFirst(maxAge: .seconds(60))))
        #expect(first == second && probe.executions.load(ordering: .relaxed) == 2)
        #expect(try await client.request("count", payload: bytes("a"), options: options(.cacheOnly())) == first)
        // Only OK replies are stored.
        _ = try? await client.request("fail", payload: bytes("x"), options: options(.cacheFirst(maxAge: .seconds(60))))
        #expect(client.cache.count == 1)
        // Cache and network: the stored reply, then the fresh one (stored in its place).
        var replies: [CachedReply] = []
        for try await reply in client.requestCacheAndNetwork("count", payload: bytes("a")) { replies.append(reply) }
        #expect(replies.map(\.isFromCache) == [true, false])
        #expect(replies[0].payload == first && text(replies[1].payload) == "execution 3a")
        #expect(
            try await client.request("count", payload: bytes("a"), options: options(.cacheOnly())) == replies[1].payload
        )
        // Network first: the network while connected...
        let fresh = try await client.request(
            "count", payload: bytes("b"), options: options(.networkFirst(), key: "fixed-1"))
        #expect(text(fresh) == "execution 4b")
        // ...and the stored reply once the server is gone.
        try await server.stop()
        try await eventually("the client noticed") { await client.connectionState.phase != .connected }
        let offline = try await client.request(
            "count", payload: bytes("b"), options: options(.networkFirst(), key: "fixed-1", timeout: .seconds(1)))
        #expect(offline == fresh)
        await running.stop()
    }

    @Test func aPushOnATopicInvalidatesItsReplies() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = client(server.endpoint)
        let stream = running.client.pushes(topic: "echo")
        try await running.waitUntilConnected()
        _ = try await running.client.request(
            "echo", payload: bytes("p"), options: options(.cacheFirst(maxAge: .seconds(60))))
        #expect(running.client.cache.count == 1)
        server.server.pushBestEffort(to: "wes", topic: "echo", payload: bytes("changed"))
        _ = try await within(.seconds(20), "the push") {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(running.client.cache.count == 0)
        await running.stop()
        try await server.stop()
    }

    /// Five identical calls while the server holds the first: one execution, every caller gets
    /// its reply, and a caller that gives up does not take the others down.
    @Test func identicalCallsInFlightShareOneRequest() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = client(server.endpoint)
        try await running.waitUntilConnected()
        let client = running.client
        var options = RequestOptions()
        options.coalesces = true
        let shared = options
        var callers: [Task<[UInt8], any Error>] = []
        for _ in 0..<5 {
            callers.append(Task { try await client.request("gated", payload: bytes("q"), options: shared) })
        }
        while try await probe.events.next() != "started gated" {}
        try await eventually("all five joined") { client.coalescer.counts == (1, 4) }
        callers[2].cancel()
        await #expect(throws: CancellationError.self) { try await callers[2].value }
        probe.gate.put(())
        for (index, caller) in callers.enumerated() where index != 2 {
            #expect(text(try await caller.value) == "execution 1q")
        }
        #expect(probe.executions.load(ordering: .relaxed) == 1)
        #expect(await client.statistics.requestsSent == 2)  // the login and the shared call
        await running.stop()
        try await server.stop()
    }

    @Test func theSharedRequestIsCancelledWhenItsLastCallerLeaves() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = client(server.endpoint)
        try await running.waitUntilConnected()
        let client = running.client
        var options = RequestOptions()
        options.coalesces = true
        let shared = options
        let callers = (0..<3).map { _ in Task { try await client.request("hang", options: shared) } }
        while !(try await probe.events.next().hasPrefix("started")) {}
        try await eventually("all three joined") { client.coalescer.counts == (1, 2) }
        callers[0].cancel()
        callers[1].cancel()
        #expect(await client.statistics.cancellations == 0)
        callers[2].cancel()
        #expect(try await probe.events.next().hasPrefix("cancelled"))
        for caller in callers { await #expect(throws: CancellationError.self) { try await caller.value } }
        await running.stop()
        try await server.stop()
    }
}

import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkRedis

/// Issue #43's reproductions on a fleet of two servers sharing one Redis: a flood of client ids
/// refused at its principal's budget while the victim's stored reply is replayed, and large
/// compressed echoes that leave Redis within the stored-reply bytes.
@Suite(.sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetBudgetTests {
    /// A raw connection to `server` as `clientID`, logged in as `principal`, offering zlib. Each
    /// login has a request id of its own: a login replayed from the window binds no principal.
    static func connect(
        _ fleet: RedisFleet, _ server: Int, as clientID: String, principal: String
    ) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: try await fleet.server(server).localAddress)
        try await client.send(.hello(Frame.Hello(clientID: clientID, metadata: ["longlink-compression": "zlib"])))
        guard case .welcome = try await client.nextFrame() else {
            throw FrameClient.UnexpectedEvent(event: .closed(nil), expected: "Welcome")
        }
        let login = try await client.call("login", principal, id: "login-\(UInt64.random(in: 0...UInt64.max))")
        #expect(login.status == nil, "\(login)")
        return client
    }

    /// Sends `request` and waits for its response.
    static func send(_ client: FrameClient, _ request: Frame.Request) async throws -> Frame.Response {
        try await client.send(.request(request))
        let frame = try await client.take("the response to \(request.requestID)", within: .seconds(20)) {
            if case .response(let response) = $0 { response.requestID == request.requestID } else { false }
        }
        guard case .response(let response) = frame else {
            throw FrameClient.UnexpectedEvent(event: .frame(frame), expected: request.requestID)
        }
        return response
    }

    /// Redis's `used_memory`, and `used_memory_dataset` (without its connections' buffers,
    /// which a 4 MB argument grows for a while).
    static func usedMemory(_ fleet: RedisFleet) async throws -> (total: Int, dataset: Int) {
        let info = try await fleet.counter.run(RedisCommand("INFO", "memory")).string ?? ""
        func field(_ name: String) -> Int {
            let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix(name + ":") }
            return line.flatMap { Int($0.dropFirst(name.count + 1)) } ?? -1
        }
        return (field("used_memory"), field("used_memory_dataset"))
    }

    /// Issue #43, scaled by 1/100 (100 entries per client, 200 per principal): the victim's
    /// request runs on s0 and is answered; eleven client ids of the same principal then send 100
    /// one-byte echoes each, half through s0 and half through s1, all at once. Exactly the
    /// principal's budget is taken (199 beside the victim's entry): a flooding client that got in
    /// gives up its own oldest replies for its next requests, the others (and a late client id,
    /// which has nothing of its own to give up) are refused `RESOURCE_EXHAUSTED` with a retry hint
    /// and run nothing. The victim's copy, resent on s1, is replayed from Redis: its request ran
    /// once.
    @Test func aFloodOfClientIDsIsRefusedAndTheVictimsCopyIsReplayed() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.entriesPerClient = 100
            budgets.entriesPerPrincipal = 200
            let fleet = try await RedisFleet.start(on: redis, count: 2, slowFor: .milliseconds(10), budgets: budgets)
            let victim = try await Self.connect(fleet, 0, as: "victim", principal: "alice")
            let request = Frame.Request(requestID: "10", method: "slow", payload: bytes("count"))
            let ran = try await Self.send(victim, request)
            #expect(ran.status == nil && ran.payload == bytes("s0"), "\(ran)")
            victim.close()
            let keys = RedisKeys(prefix: fleet.prefix)
            let entry = keys.dedupeEntry(principal: "alice", clientID: "victim", requestID: "10")
            try await eventually("the victim's reply is stored", within: .seconds(10)) {
                let held = try? await fleet.counter.run(RedisCommand("GETRANGE", entry.name, "0", "0").keyed(1..<2))
                return held?.string == "D"
            }
            let before = try await Self.usedMemory(fleet)

            let statuses = try await withThrowingTaskGroup(of: [Frame.Status?].self) { group in
                for index in 0..<11 {
                    group.addTask {
                        let client = try await Self.connect(fleet, index % 2, as: "flood-\(index)", principal: "alice")
                        var frames: [UInt8] = []
                        for id in 0..<100 {
                            Frame.request(Frame.Request(requestID: "\(id)", method: "echo", payload: [7]))
                                .encodeDelimited(into: &frames)
                        }
                        try await client.sendRaw(frames)
                        var statuses: [Frame.Status?] = []
                        for _ in 0..<100 { statuses.append(try await client.response().status) }
                        client.close()
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let answered = statuses.filter { $0 == nil }.count
            let refused = statuses.compactMap { $0 }
            // Which flooding client gets in before the principal's bound is full depends on the
            // timing; one that did gives up its own oldest replies from then on.
            #expect(answered >= 199 && answered + refused.count == 1_100, "\(answered) answered, \(refused.count) refused")
            #expect(refused.allSatisfy { $0.code == .resourceExhausted && $0.message.contains("Retry after") })
            // A new client id has nothing of its own to give up: refused, the victim's entry stays.
            let late = try await Self.connect(fleet, 1, as: "flood-late", principal: "alice")
            let lateAnswer = try await Self.send(late, Frame.Request(requestID: "1", method: "echo", payload: [7]))
            #expect(lateAnswer.status?.code == .resourceExhausted, "\(lateAnswer)")
            #expect(lateAnswer.status?.message.contains("Retry after") == true)
            late.close()

            let again = try await Self.connect(fleet, 1, as: "victim", principal: "alice")
            var copy = request
            copy.resent = true
            let replayed = try await Self.send(again, copy)
            #expect(replayed.status == nil && replayed.payload == bytes("s0"), "\(replayed)")
            #expect(try await fleet.runs("count") == 1)
            again.close()
            let held = try await fleet.counter.run(RedisCommand("HGET", entry.accounts, "n").keyed(1..<2))
            let after = try await Self.usedMemory(fleet)
            print(
                "FleetBudgetTests flood: Redis used_memory \(before) -> \(after) bytes; alice holds"
                    + " \(held.string ?? "?") entries")
            #expect(held.string == "200")
            await fleet.stop()
        }
    }

    /// Issue #43: 100 echoes of 4,000,000 bytes, each sent as about 85 KB of zlib, through s0.
    /// Redis keeps the replies within the client's 16 MiB (the default): each reply is kept, the
    /// client giving up its own oldest ones to make room, so the newest are held and a kept
    /// one's copy on s1 is replayed. Measured with `MEMORY USAGE` of the principal's keys and
    /// Redis's `used_memory`.
    @Test func compressedEchoesLeaveRedisWithinTheStoredReplyBytes() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, count: 2, slowFor: .milliseconds(10))
            var generator = SplitMix64(seed: 43)
            var plain: [UInt8] = []
            while plain.count < 4_000_000 {
                let byte = UInt8(truncatingIfNeeded: generator.next())
                plain += repeatElement(byte, count: Int(1 + generator.next() % 300))
            }
            plain.removeLast(plain.count - 4_000_000)
            let deflated = try #require(PayloadCompressor.deflate(plain))
            let before = try await Self.usedMemory(fleet)
            let client = try await Self.connect(fleet, 0, as: "echoer", principal: "bulk")
            let started = ContinuousClock.now
            for id in 0..<100 {
                var request = Frame.Request(requestID: "\(id)", method: "echo", payload: deflated)
                request.compression = 1
                let response = try await Self.send(client, request)
                #expect(response.status == nil, "\(id): \(String(describing: response.status))")
            }
            let elapsed = ContinuousClock.now - started
            client.close()
            let keys = RedisKeys(prefix: fleet.prefix)
            let entries = (0..<100).map { keys.dedupeEntry(principal: "bulk", clientID: "echoer", requestID: "\($0)") }
            var kinds: [String] = []
            try await eventually("every reply stored or given up", within: .seconds(20)) {
                let heads = try? await fleet.counter.send(
                    entries.map { RedisCommand("GETRANGE", $0.name, "0", "0").keyed(1..<2) })
                kinds = (heads ?? []).map { $0.string ?? "" }
                return kinds.count == 100 && kinds.last == "D" && kinds.allSatisfy { $0 == "D" || $0 == "" }
            }
            let kept = kinds.filter { $0 == "D" }.count
            let names = entries.map(\.name) + [entries[0].accounts, entries[0].index]
            let usages = try await fleet.counter.send(names.map { RedisCommand("MEMORY", "USAGE", $0).keyed(2..<3) })
            let stored = usages.compactMap(\.int64).reduce(0, +)
            let accounted = try await fleet.counter.run(RedisCommand("HGET", entries[0].accounts, "b").keyed(1..<2))
            let after = try await Self.usedMemory(fleet)
            print(
                "FleetBudgetTests echoes: \(deflated.count) bytes sent per echo, \(elapsed) for 100;"
                    + " \(kept) replies kept;"
                    + " accounted \(accounted.string ?? "?") bytes; MEMORY USAGE of the keys \(stored) bytes;"
                    + " Redis used_memory \(before) -> \(after) bytes")
            let budget = RedisDedupeBudgets().bytesPerClient
            // The newest, none of them "not kept".
            #expect(kept >= 1 && kept < 100 && kinds.suffix(kept).allSatisfy { $0 == "D" }, "\(kinds)")
            #expect(Int(accounted.string ?? "") ?? .max <= budget)
            // Redis's own bookkeeping beside the bytes charged: a few hundred bytes per entry, and
            // its allocator's rounding of a large value up to its size class (at most a quarter).
            #expect(stored <= budget * 5 / 4 + 100 * 512, "\(stored)")
            #expect(after.dataset - before.dataset <= budget * 5 / 4 + (1 << 20), "\(before) -> \(after)")

            let other = try await Self.connect(fleet, 1, as: "echoer", principal: "bulk")
            let keptID = try #require(kinds.firstIndex(of: "D"))
            var copy = Frame.Request(requestID: "\(keptID)", method: "echo", payload: deflated)
            (copy.compression, copy.resent) = (1, true)
            let replayed = try await Self.send(other, copy)
            #expect(replayed.status == nil, "\(String(describing: replayed.status))")
            other.close()
            await fleet.stop()
        }
    }
}

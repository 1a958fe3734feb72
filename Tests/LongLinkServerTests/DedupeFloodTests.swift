import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// Exactly-once under a flood, over real loopback sockets: the de-duplication window's budgets
/// keep one tenant's requests from spending another's stored replies, in count and in bytes.
@Suite("De-duplication under a flood", .sharedMachine, .serialized)
struct DedupeFloodTests {
    /// The default budgets scaled down tenfold (100,000 / 20,000 / 10,000 entries), so that the
    /// flood of the reproduction keeps its shape: eleven client ids sending a per-client
    /// budget's worth each exceed every entry budget.
    static var scaled: ServerConfiguration {
        var configuration = ServerConfiguration.testing
        configuration.budgets.dedupeCapacity = 10_000
        configuration.budgets.dedupeCapacityPerPrincipal = 2_000
        configuration.budgets.dedupeCapacityPerClient = 1_000
        return configuration
    }

    static func encoded(_ frames: [Frame]) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { frame.encodeDelimited(into: &bytes) }
        return bytes
    }

    /// Eleven logged-in client ids, one after another, each send `perClient` one-byte echoes in
    /// one write; returns how many were refused `RESOURCE_EXHAUSTED` (every other one must be
    /// answered with its byte). One after another, so that which clients find room is
    /// deterministic: those that come once a budget is full have nothing of their own to give up.
    static func flood(
        _ address: SocketAddress, round: Int, perClient: Int, principal: (Int) -> String
    ) async throws -> Int {
        var refused = 0
        for index in 0..<11 {
            let client = try await FrameClient.loggedIn(address, clientID: "flood-\(index)", as: principal(index))
            defer { client.close() }
            let requests = (0..<perClient).map {
                Frame.request(Frame.Request(requestID: "r\(round)-\($0)", method: "echo", payload: [1]))
            }
            try await client.sendRaw(encoded(requests))
            for _ in 0..<perClient {
                let reply = try await client.response()
                if reply.status?.code == .resourceExhausted {
                    refused += 1
                } else {
                    #expect(reply.status == nil && reply.payload == [1], "\(reply)")
                }
            }
        }
        return refused
    }

    /// The victim's `count`, resent with the same id on a new connection (`resent: true`).
    static func resend(_ address: SocketAddress, id: String) async throws -> Frame.Response {
        let again = try await FrameClient.loggedIn(address, clientID: "victim-phone", as: "victim")
        defer { again.close() }
        var copy = Frame.Request(requestID: id, method: "count", payload: bytes("+"))
        copy.resent = true
        try await again.send(.request(copy))
        return try await again.response()
    }

    /// Reproduction 1 of the issue: one tenant's eleven client ids flood the window with echoes
    /// (filling its principal's budget, then refused); a victim's `count` answered meanwhile and
    /// resent after a reconnect is replayed, never run twice, though the flood goes on.
    @Test func aFloodCannotMakeAVictimsResendRunTwice() async throws {
        let probe = Probe()
        try await withServer(Self.scaled, probe: probe) { server, address in
            let refusedFirst = try await Self.flood(address, round: 1, perClient: 1_000) { _ in "mallory" }
            let victim = try await FrameClient.loggedIn(address, clientID: "victim-phone", as: "victim")
            let original = try await victim.call("count", bytes("+"), id: "pay-1")
            #expect(original.text == "execution 1+")
            victim.close()
            let refusedAgain = try await Self.flood(address, round: 2, perClient: 1_000) { _ in "mallory" }
            let replayed = try await Self.resend(address, id: "pay-1")
            #expect(replayed == original)
            #expect(probe.executions.load(ordering: .relaxed) == 1)
            // The flood past mallory's 2,000 entries was refused: nine of eleven clients had
            // nothing of their own to give up (the first two give up their own).
            #expect(refusedFirst == 9 * 1_000 && refusedAgain == 9 * 1_000, "\(refusedFirst), \(refusedAgain)")
            let statistics = server.statistics
            #expect(statistics.dedupeRefusals == refusedFirst + refusedAgain)
            #expect(statistics.dedupeEntries <= 2_000 + 1)
            #expect(statistics.requestsReplayed == 1)
        }
    }

    /// The same with a tenant of eleven principals, whose flood meets the bound in all: the
    /// newcomers past it are refused, and the victim's stored reply is not evicted to make room.
    @Test func aFloodOfManyPrincipalsFillsTheWindowButEvictsNobodyElse() async throws {
        let probe = Probe()
        var configuration = Self.scaled
        configuration.budgets.dedupeCapacityPerPrincipal = configuration.budgets.dedupeCapacityPerClient
        try await withServer(configuration, probe: probe) { server, address in
            let victim = try await FrameClient.loggedIn(address, clientID: "victim-phone", as: "victim")
            let original = try await victim.call("count", bytes("+"), id: "pay-1")
            victim.close()
            let refused = try await Self.flood(address, round: 1, perClient: 1_000) { "mallory-\($0)" }
            #expect(refused >= 1_000, "\(refused)")
            #expect(server.statistics.dedupeEntries == 10_000)
            #expect(try await Self.resend(address, id: "pay-1") == original)
            #expect(probe.executions.load(ordering: .relaxed) == 1)
        }
    }

    /// About `size` bytes that deflate within the server's 1:64 ratio, as the 4,000,000
    /// bytes sent as 67,080: zeros with a random byte now and then.
    static func compressible(_ size: Int) throws -> (plain: [UInt8], deflated: [UInt8]) {
        var generator = SplitMix64(seed: 7)
        var plain = [UInt8](repeating: 0, count: size)
        for index in stride(from: 0, to: size, by: 48) { plain[index] = UInt8(truncatingIfNeeded: generator.next()) }
        let deflated = try #require(PayloadCompressor.deflate(plain, level: 9))
        try #require(deflated.count * 64 >= size, "\(deflated.count) bytes deflated: past the 1:64 ratio")
        return (plain, deflated)
    }

    static func compressed(_ id: String, _ method: String, _ payload: [UInt8]) -> Frame {
        var request = Frame.Request(requestID: id, method: method, payload: payload)
        request.compression = 1
        return .request(request)
    }

    /// A logged-in client past a `Hello` that offered zlib.
    static func compressingClient(_ address: SocketAddress, clientID: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        try await client.send(.hello(Frame.Hello(clientID: clientID, metadata: ["longlink-compression": "zlib"])))
        guard case .welcome(let welcome) = try await client.nextFrame() else {
            throw FrameClient.UnexpectedEvent(event: .closed(nil), expected: "Welcome")
        }
        #expect(welcome.metadata["longlink-compression"] == "zlib")
        try await client.logIn(as: "bulk")
        return client
    }

    /// Reproduction 2 of the issue: 100 echoes of 4,000,000 bytes, sent compressed (a few
    /// megabytes on the wire), leave the server holding no more stored reply bytes than the
    /// client's budget, after the connection closed too; the client's newest reply is still kept.
    @Test func compressedEchoesStayWithinTheClientsStoredBytes() async throws {
        let (plain, deflated) = try Self.compressible(4_000_000)
        let configuration = ServerConfiguration.testing
        try await withServer(configuration) { server, address in
            let client = try await Self.compressingClient(address, clientID: "bulk-phone")
            for index in 0..<100 {
                try await client.send(Self.compressed("e\(index)", "echo", deflated))
                let reply = try await client.response()
                #expect(reply.status == nil && reply.requestID == "e\(index)")
                #expect(server.statistics.dedupeStoredBytes <= configuration.budgets.dedupeBytesPerClient)
            }
            // The newest is replayed, compressed again for this connection.
            try await client.send(Self.compressed("e99", "echo", deflated))
            let replay = try await client.response()
            #expect(try PayloadCompressor.inflate(replay.payload, limit: 8 << 20) == plain)
            client.close()
            let statistics = server.statistics
            #expect(statistics.requestsReplayed == 1)
            #expect(statistics.dedupeStoredBytes <= configuration.budgets.dedupeBytesPerClient)
            #expect(statistics.dedupeStoredBytes >= 4_000_000)
            #expect(statistics.dedupeRepliesNotKept == 0)
            // Four replies of 4,000,000 bytes fit 16 MiB: the client gave up its own older ones.
            #expect(statistics.dedupeEntries <= configuration.budgets.dedupeBytesPerClient / 4_000_000)
        }
    }

    /// A reply larger than the client's stored bytes is answered, then kept as a marker: its resend
    /// on a new connection is answered `RESOURCE_EXHAUSTED` and does not run again.
    @Test func aReplyTooLargeToKeepIsNotRunAgain() async throws {
        let probe = Probe()
        var configuration = ServerConfiguration.testing
        configuration.budgets.dedupeBytesPerClient = 1 << 20
        try await withServer(configuration, probe: probe) { server, address in
            let large = [UInt8](repeating: 0x41, count: 2 << 20)
            let first = try await FrameClient.loggedIn(address, clientID: "phone", as: "ann")
            let reply = try await first.call("count", large, id: "big")
            #expect(reply.status == nil && reply.payload.count == large.count + "execution 1".utf8.count)
            first.close()
            let second = try await FrameClient.loggedIn(address, clientID: "phone", as: "ann")
            let copy = try await second.call("count", large, id: "big")
            #expect(copy.status?.code == .resourceExhausted)
            #expect(copy.status?.message.contains("ran once") == true, "\(copy)")
            #expect(probe.executions.load(ordering: .relaxed) == 1)
            #expect(server.statistics.dedupeRepliesNotKept == 1)
            #expect(server.statistics.dedupeStoredBytes < 1 << 20)
        }
    }
}

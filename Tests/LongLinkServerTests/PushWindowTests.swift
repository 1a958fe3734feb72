import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

/// The per-connection send window for reliable pushes (`ServerConfiguration.reliablePushWindow`).
///
/// "Nothing more was sent" is observed without waiting for a silence: a synchronous echo sent
/// afterwards is answered inline, in order on the connection, so any push the server had sent
/// first would arrive before its reply.
@Suite("Reliable push window", .sharedMachine)
struct PushWindowTests {
    /// A window that only an Ack opens, unless `timeout` says otherwise.
    private static func configuration(window: Int, timeout: Duration = .seconds(3_600)) -> ServerConfiguration {
        var configuration = ServerConfiguration.testing
        configuration.reliablePushWindow = window
        configuration.reliablePushWindowTimeout = timeout
        return configuration
    }

    private func loggedIn(_ address: SocketAddress, as user: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: "\(user)-device")
        #expect(
            try await client.call("login", bytes(user), id: "login-\(UInt64.random(in: 0...UInt64.max))").text
                == "welcome")
        return client
    }

    @Test func aFullWindowWaitsForAnAck() async throws {
        try await withServer(Self.configuration(window: 3)) { server, address in
            let client = try await loggedIn(address, as: "wanda")
            for n in 1...10 { try await server.push(to: "wanda", topic: "t", payload: [UInt8(n)]) }
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [1, 2, 3])
            // A live push finds the window full too.
            try await server.push(to: "wanda", topic: "t", payload: [11])
            #expect(try await client.seqsBeforeFence("f2") == [])
            try await client.send(.ack(Frame.Ack(seqs: [1])))
            #expect(try await client.seqsBeforeFence("f3") == [4])
            try await client.send(.ack(Frame.Ack(seqs: [2, 3, 4])))
            #expect(try await client.seqsBeforeFence("f4") == [5, 6, 7])
            #expect(server.statistics.reliablePushesSent == 7)
        }
    }

    @Test func acksOfSeqsNotSentDoNotOpenTheWindowBeyondItsSize() async throws {
        try await withServer(Self.configuration(window: 3)) { server, address in
            let client = try await loggedIn(address, as: "xena")
            for n in 1...20 { try await server.push(to: "xena", topic: "t", payload: [UInt8(n)]) }
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [1, 2, 3])
            // Seq 0 and seqs not sent yet free nothing (17 to 19 are deleted from the store, though).
            try await client.send(.ack(Frame.Ack(seqs: [0, 17, 18, 19, 1_000])))
            #expect(try await client.seqsBeforeFence("f2") == [])
            try await client.send(.ack(Frame.Ack(seqs: [1, 2, 3])))
            #expect(try await client.seqsBeforeFence("f3") == [4, 5, 6])
            // Acknowledging again what was acknowledged already cannot make room beyond the window.
            try await client.send(.ack(Frame.Ack(seqs: [4, 5, 6, 1, 2, 3])))
            #expect(try await client.seqsBeforeFence("f4") == [7, 8, 9])
        }
    }

    /// A replay a `Sync` begins counts its window afresh. (A `Sync` while a replay still runs
    /// begins none: see `SyncReplayTests`.)
    @Test func syncStartsTheWindowAfresh() async throws {
        var configuration = Self.configuration(window: 3)
        configuration.syncReplayInterval = .zero
        try await withServer(configuration) { server, address in
            let client = try await loggedIn(address, as: "yuri")
            for n in 1...4 { try await server.push(to: "yuri", topic: "t", payload: [UInt8(n)]) }
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [1, 2, 3])
            try await client.send(.ack(Frame.Ack(seqs: [1])))
            #expect(try await client.seqsBeforeFence("f2") == [4])
            // The room this frees finds the store read to its end: the replay is over.
            try await client.send(.ack(Frame.Ack(seqs: [2])))
            #expect(try await client.seqsBeforeFence("f3") == [])
            // 3 and 4 are still outstanding, yet a Sync resends both: the window counts afresh.
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f4") == [3, 4])
        }
    }

    @Test func aNewConnectionHasAFreshWindow() async throws {
        try await withServer(Self.configuration(window: 3)) { server, address in
            let first = try await loggedIn(address, as: "zoe")
            for n in 1...10 { try await server.push(to: "zoe", topic: "t", payload: [UInt8(n)]) }
            try await first.send(.sync(Frame.Sync()))
            #expect(try await first.seqsBeforeFence("f1") == [1, 2, 3])
            first.close()
            try await eventually("the first connection is gone") { server.statistics.openConnections == 0 }

            let second = try await loggedIn(address, as: "zoe")
            try await second.send(.sync(Frame.Sync()))
            #expect(try await second.seqsBeforeFence("f2") == [1, 2, 3])
            try await second.send(.ack(Frame.Ack(seqs: [1, 2, 3])))
            #expect(try await second.seqsBeforeFence("f3") == [4, 5, 6])
        }
    }

    /// A client that acknowledges what it receives gets every push through a small window, while
    /// the producer keeps pushing and the client syncs again halfway: the window never stalls.
    @Test func aSmallWindowDeliversEverythingToAnAcknowledgingClient() async throws {
        let total = 2_000
        try await withServer(Self.configuration(window: 7)) { server, address in
            let client = try await loggedIn(address, as: "ava")
            try await client.send(.sync(Frame.Sync()))
            let producer = Task {
                for n in 0..<total { try await server.push(to: "ava", topic: "t", payload: [UInt8(n & 0xFF)]) }
            }
            var taken = Set<UInt64>()
            var syncedAgain = false
            while taken.count < total {
                guard case .push(let push) = try await client.nextFrame() else {
                    Issue.record("expected only pushes")
                    break
                }
                taken.insert(push.seq)
                try await client.send(.ack(Frame.Ack(seqs: [push.seq])))
                if !syncedAgain, taken.count >= total / 2 {
                    syncedAgain = true
                    try await client.send(.sync(Frame.Sync()))
                }
            }
            try await producer.value
            #expect(taken == Set(1...UInt64(total)))
            try await eventually("the store is empty") { server.statistics.acksReceived >= total }
        }
    }

    /// Pushes a client holds without acknowledging (a topic nobody reads) fill the window; the
    /// window opens again after its timeout (by the server's clock), so the other topics still
    /// arrive.
    @Test func pushesHeldUnacknowledgedDoNotStopTheOthers() async throws {
        let clock = ManualClock()
        var configuration = Self.configuration(window: 3, timeout: .seconds(20))
        configuration.clock = clock
        try await withServer(configuration) { server, address in
            let client = try await loggedIn(address, as: "ben")
            for n in 1...7 { try await server.push(to: "ben", topic: "unread", payload: [UInt8(n)]) }
            for n in 1...2 { try await server.push(to: "ben", topic: "alerts", payload: [UInt8(n)]) }
            try await client.send(.sync(Frame.Sync()))
            // The fence's reply follows the pump that filled the window and armed its timer.
            #expect(try await client.seqsBeforeFence("f1") == [1, 2, 3])
            await clock.advance(by: .seconds(19))
            #expect(try await client.seqsBeforeFence("f2") == [])
            await clock.advance(by: .seconds(1))
            #expect(try await client.seqsBeforeFence("f3") == [4, 5, 6])
            await clock.advance(by: .seconds(20))
            #expect(try await client.seqsBeforeFence("f4") == [7, 8, 9])
            // Only the alerts are taken and acknowledged.
            try await client.send(.ack(Frame.Ack(seqs: [8, 9])))
            #expect(server.statistics.pushWindowsReopened == 2)
        }
    }

    @Test func aWindowBelowOneOrANonPositiveTimeoutIsRejected() {
        var configuration = ServerConfiguration()
        configuration.reliablePushWindow = 0
        #expect(throws: LongLinkError.self) { try configuration.validate() }
        configuration.reliablePushWindow = 1
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.reliablePushWindowTimeout = .zero
        #expect(throws: LongLinkError.self) { try configuration.validate() }
    }
}

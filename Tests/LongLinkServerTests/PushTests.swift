import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

@Suite("Pushes, Ack and Sync", .sharedMachine)
struct PushTests {
    private func login(_ client: FrameClient, as user: String) async throws {
        #expect(
            try await client.call("login", bytes(user), id: "login-\(UInt64.random(in: 0...UInt64.max))").text
                == "welcome")
    }

    private func pushes(_ client: FrameClient, count: Int) async throws -> [Frame.Push] {
        var result: [Frame.Push] = []
        while result.count < count {
            let frame = try await client.nextFrame()
            guard case .push(let push) = frame else {
                Issue.record("expected Push, got \(frame)")
                return result
            }
            result.append(push)
        }
        return result
    }

    @Test func reliablePushesWaitForSyncAndComeInSeqOrder() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "alice-phone")
            try await login(client, as: "alice")
            for n in 1...5 {
                #expect(try await server.push(to: "alice", topic: "alerts", payload: bytes("alert \(n)")) == UInt64(n))
            }
            // Nothing before Sync: the next frame is the reply to this echo.
            #expect(try await client.call("echo", id: "probe").requestID == "probe")
            try await client.send(.sync(Frame.Sync()))
            let delivered = try await pushes(client, count: 5)
            #expect(delivered.map(\.seq) == [1, 2, 3, 4, 5])
            #expect(delivered.map(\.topic) == Array(repeating: "alerts", count: 5))
            #expect(delivered.last?.payload == bytes("alert 5"))
            // Live pushes follow once synced.
            try await server.push(to: "alice", topic: "alerts", payload: bytes("alert 6"))
            #expect(try await pushes(client, count: 1).map(\.seq) == [6])
        }
    }

    @Test func unackedPushesAreRedeliveredAfterReconnectAndAckedOnesAreNot() async throws {
        try await withServer { server, address in
            let first = try await FrameClient.connect(to: address)
            _ = try await first.handshake(clientID: "bob-phone")
            try await login(first, as: "bob")
            try await first.send(.sync(Frame.Sync()))
            for n in 1...5 { try await server.push(to: "bob", topic: "alerts", payload: bytes("\(n)")) }
            #expect(try await pushes(first, count: 5).map(\.seq) == [1, 2, 3, 4, 5])
            try await first.send(.ack(Frame.Ack(seqs: [1, 2, 3, 99])))
            // The ack is processed before the echo reply (one connection, in order).
            #expect(try await first.call("echo", id: "fence").requestID == "fence")
            first.close()

            // Pushed while the client was offline.
            try await server.push(to: "bob", topic: "alerts", payload: bytes("6"))

            let second = try await FrameClient.connect(to: address)
            _ = try await second.handshake(clientID: "bob-phone")
            try await login(second, as: "bob")
            try await second.send(.sync(Frame.Sync()))
            #expect(try await pushes(second, count: 3).map(\.seq) == [4, 5, 6])
            #expect(server.statistics.acksReceived == 4)
        }
    }

    @Test func aSecondSyncRedeliversEverythingUnacked() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "c")
            try await login(client, as: "carol")
            try await client.send(.sync(Frame.Sync()))
            try await server.push(to: "carol", topic: "t", payload: [1])
            try await server.push(to: "carol", topic: "t", payload: [2])
            #expect(try await pushes(client, count: 2).map(\.seq) == [1, 2])
            try await client.send(.ack(Frame.Ack(seqs: [1])), .sync(Frame.Sync()))
            #expect(try await pushes(client, count: 1).map(\.seq) == [2])
        }
    }

    /// Any connection of a principal may send `Ack`: it deletes only what the server sent on it.
    @Test func anAckDeletesOnlyPushesSentOnItsConnection() async throws {
        try await withServer { server, address in
            for n in 1...4 { try await server.push(to: "erin", topic: "t", payload: [UInt8(n)]) }
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "e")
            try await login(client, as: "erin")
            // Not synced: nothing was sent, so nothing is deleted.
            try await client.send(.ack(Frame.Ack(seqs: [1, 2, 3, 4])))
            #expect(try await client.call("echo", id: "fence-1").requestID == "fence-1")
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: "erin") == 4)

            try await client.send(.sync(Frame.Sync()))
            #expect(try await pushes(client, count: 4).map(\.seq) == [1, 2, 3, 4])
            try await server.push(to: "erin", topic: "t", payload: [5])
            #expect(try await pushes(client, count: 1).map(\.seq) == [5])
            // Seq 6 does not exist yet and 7 never will before the next push: ignored.
            try await client.send(.ack(Frame.Ack(seqs: [1, 2, 6, 7])))
            #expect(try await client.call("echo", id: "fence-2").requestID == "fence-2")
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: "erin") == 3)
            try await server.push(to: "erin", topic: "t", payload: [6])
            #expect(try await pushes(client, count: 1).map(\.seq) == [6])
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: "erin") == 4)
        }
    }

    /// A push the clients could not read is refused to its producer and never stored, where it
    /// would make every client of the principal reconnect and receive it again, for ever.
    @Test func aPushLargerThanTheClientsFrameLimitIsRefused() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxOutgoingFrameBytes = 1_000
        try await withServer(configuration) { server, _ in
            let fits = [UInt8](repeating: 1, count: 900)
            let first = try await server.push(to: "fay", topic: "t", payload: fits)
            #expect(first == 1)
            let tooLarge = [UInt8](repeating: 1, count: 1_000)
            await #expect {
                try await server.push(to: "fay", topic: "t", payload: tooLarge)
            } throws: { error in
                (error as? LongLinkError)?.code == .invalidArgument
                    && (error as? LongLinkError)?.message.contains("too large") == true
            }
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: "fay") == 1)
            // The next push gets the next seq: nothing was taken by the refused one.
            let next = try await server.push(to: "fay", topic: "t", payload: fits)
            #expect(next == 2)
        }
    }

    @Test func theStoreIsBoundedInBytesPerPrincipal() throws {
        let store = InMemoryPushStore(capacityPerPrincipal: 100, bytesPerPrincipal: 1_000)
        for _ in 0..<9 {
            _ = try store.append(PushAppend(principal: "p", topic: "t", payload: [UInt8](repeating: 0, count: 100)))
        }
        // 9 × 101 bytes held: 101 more would pass 1,000.
        #expect {
            try store.append(PushAppend(principal: "p", topic: "t", payload: [UInt8](repeating: 0, count: 100)))
        } throws: { error in
            (error as? LongLinkError)?.code == .resourceExhausted
        }
        #expect(store.unacknowledgedCount(principal: "p") == 9)
        // Another principal has its own bound; an ack frees room.
        _ = try store.append(PushAppend(principal: "q", topic: "t", payload: [UInt8](repeating: 0, count: 100)))
        store.acknowledge(AcknowledgedPushes(principal: "p", seqs: [1]))
        let seq = try store.append(PushAppend(principal: "p", topic: "t", payload: [UInt8](repeating: 0, count: 100)))
            .seq
        #expect(seq == 10)
    }

    @Test func aPrincipalWithNothingStoredIsForgottenAndItsSeqsStillRise() throws {
        let store = InMemoryPushStore()
        #expect(try store.append(PushAppend(principal: "p", topic: "t", payload: [1])).seq == 1)
        #expect(try store.append(PushAppend(principal: "p", topic: "t", payload: [2])).seq == 2)
        store.acknowledge(AcknowledgedPushes(principal: "p", seqs: [1, 2]))
        #expect(store.principalCount == 0)
        // Back with a push: its seqs go on above every seq it was given (a client keeps the old
        // ones as delivered).
        #expect(try store.append(PushAppend(principal: "p", topic: "t", payload: [3])).seq > 2)
        #expect(store.principalCount == 1)
    }

    @Test func bestEffortPushesHaveSeqZeroAndAreNotStored() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "d")
            try await login(client, as: "dave")
            server.pushBestEffort(to: "dave", topic: "quotes", payload: bytes("AAPL 1.0"))
            server.pushBestEffort(to: "nobody", topic: "quotes", payload: bytes("dropped"))
            let push = try await pushes(client, count: 1)[0]
            #expect(push.seq == 0)
            #expect(push.topic == "quotes")
            // Not stored: a Sync brings nothing back.
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.call("echo", id: "fence").requestID == "fence")
            #expect(server.statistics.reliablePushesStored == 0)
        }
    }

    @Test func aFullStoreRefusesThePushInsteadOfDroppingOne() async throws {
        let store = InMemoryPushStore(capacityPerPrincipal: 3)
        for n in 1...3 { _ = try store.append(PushAppend(principal: "p", topic: "t", payload: [UInt8(n)])) }
        #expect(throws: LongLinkError.self) { try store.append(PushAppend(principal: "p", topic: "t", payload: [4])) }
        #expect(store.unacknowledgedCount(principal: "p") == 3)
        store.acknowledge(AcknowledgedPushes(principal: "p", seqs: [1]))
        let next = try store.append(PushAppend(principal: "p", topic: "t", payload: [4]))
        #expect(next.seq == 4)
        #expect(store.unacknowledged(PushRead(principal: "p", after: 0, limit: 10)).map(\.seq) == [2, 3, 4])
    }

    @Test func theStoreAnswersRangesAndCompacts() throws {
        let store = InMemoryPushStore(capacityPerPrincipal: 100_000)
        for n in 1...2_000 { _ = try store.append(PushAppend(principal: "p", topic: "t", payload: [UInt8(n % 256)])) }
        store.acknowledge(AcknowledgedPushes(principal: "p", seqs: Array(1...1_500) + [1_600, 5_000, 0]))
        #expect(store.unacknowledgedCount(principal: "p") == 499)
        let after = store.unacknowledged(PushRead(principal: "p", after: 1_598, limit: 3))
        #expect(after.map(\.seq) == [1_599, 1_601, 1_602])
        #expect(store.unacknowledged(PushRead(principal: "p", after: 0, limit: 2)).map(\.seq) == [1_501, 1_502])
        #expect(store.unacknowledged(PushRead(principal: "p", after: 2_000, limit: 10)).isEmpty)
        #expect(store.unacknowledged(PushRead(principal: "nobody", after: 0, limit: 10)).isEmpty)
    }
}

@Suite("Backpressure recovery", .sharedMachine)
struct BackpressureRecoveryTests {
    /// A Sync that makes the server write past its high watermark inside the read callback (the
    /// server pauses reading) must not leave the connection unread once the queue drains, even when
    /// it drains within the same loop iteration.
    @Test func aLargeSyncBurstDoesNotStopTheServerReading() async throws {
        var configuration = ServerConfiguration.testing
        configuration.connectionOptions.writeBufferHighWatermark = 64 << 10
        configuration.connectionOptions.writeBufferLowWatermark = 16 << 10
        // Every push waits in the queue until the end of the iteration, so the burst does pass the
        // high watermark inside the callback (eager writes would hand it to the kernel as it grows).
        configuration.connectionOptions.eagerFlushBytes = 1 << 30
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "burst")
            #expect(try await client.call("login", bytes("kim"), id: "l").text == "welcome")
            let payload = [UInt8](repeating: 7, count: 1_024)
            for _ in 0..<1_000 { try await server.push(to: "kim", topic: "t", payload: payload) }
            try await client.send(.sync(Frame.Sync()))
            var pushes = 0
            while pushes < 1_000 {
                if case .push = try await client.nextFrame() { pushes += 1 }
            }
            #expect(server.statistics.readPauses >= 1)
            // Reading resumed: a request after the burst is answered.
            #expect(try await client.call("echo", bytes("still reading"), id: "e").text == "still reading")
        }
    }
}

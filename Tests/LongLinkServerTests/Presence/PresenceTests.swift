import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("Presence: session events and counts", .sharedMachine)
struct PresenceTests {
    private func withPresenceServer(
        _ configuration: ServerConfiguration = .testing,
        _ body: (LongLinkServer, SocketAddress, Mailbox<SessionEvent>) async throws -> Void
    ) async throws {
        var router = Probe().router()
        router.register("sessions") { payload, context in
            Array("\(context.sessions(of: String(decoding: payload, as: UTF8.self)))".utf8)
        }
        router.register("presence") { payload, context in
            Array("\(try await context.presence(of: String(decoding: payload, as: UTF8.self)).count)".utf8)
        }
        let server = LongLinkServer(configuration: configuration, router: router)
        let events = Mailbox<SessionEvent>()
        let stream = server.sessionEvents()
        let reader = Task { for await event in stream { events.put(event) } }
        defer { reader.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.shutdown() }
            try await body(server, try await server.localAddress, events)
        }
    }

    @Test func loginsAndEndsAreReportedWithTheirReasonAndCounted() async throws {
        try await withPresenceServer { server, address, events in
            let first = try await FrameClient.loggedIn(address, clientID: "phone", as: "alice")
            var event = try await events.next(within: .seconds(10), "alice's first session")
            #expect(event.principal == "alice")
            #expect(event.clientID == "phone")
            #expect(event.kind == .began)
            let second = try await FrameClient.loggedIn(address, clientID: "laptop", as: "alice")
            #expect(try await events.next(within: .seconds(10)).kind == .began)
            #expect(server.sessions(of: "alice") == 2)
            #expect(server.isConnected("alice"))
            #expect(try await second.call("sessions", bytes("alice"), id: "s1").text == "2")
            #expect(try await second.call("sessions", bytes("nobody"), id: "s2").text == "0")

            first.close()
            event = try await events.next(within: .seconds(10), "the phone's session to end")
            #expect(event.clientID == "phone")
            #expect(event.kind == .ended(.closedByClient))
            #expect(server.sessions(of: "alice") == 1)

            // Bound to another principal: alice's session ends, bob's begins.
            try await second.logIn(as: "bob")
            event = try await events.next(within: .seconds(10))
            #expect(event.principal == "alice")
            #expect(event.kind == .ended(.rebound))
            event = try await events.next(within: .seconds(10))
            #expect(event.principal == "bob")
            #expect(event.kind == .began)
            #expect(!server.isConnected("alice"))
            #expect(server.sessions(of: "bob") == 1)
        }
    }

    /// Without a store that shares presence, `presence(of:)` is this server's own sessions.
    @Test func presenceOnOneServerIsItsOwnSessions() async throws {
        try await withPresenceServer { server, address, events in
            #expect(try await server.presence(of: "dan") == Presence(principal: "dan", count: 0, sessions: []))
            let first = try await FrameClient.loggedIn(address, clientID: "phone", as: "dan")
            let second = try await FrameClient.loggedIn(address, clientID: "laptop", as: "dan")
            for _ in 0..<2 { #expect(try await events.next(within: .seconds(10)).kind == .began) }
            let presence = try await server.presence(of: "dan")
            #expect(presence.count == 2)
            #expect(presence.isConnected)
            #expect(presence.sessions.map(\.serverID) == Array(repeating: server.configuration.serverID, count: 2))
            #expect(try await second.call("presence", bytes("dan"), id: "p1").text == "2")
            first.close()
            #expect(try await events.next(within: .seconds(10)).kind == .ended(.closedByClient))
            #expect(try await second.call("presence", bytes("dan"), id: "p2").text == "1")
        }
    }

    @Test func aClientThatSaysGoodbyeClosedItsSession() async throws {
        try await withPresenceServer { server, address, events in
            let client = try await FrameClient.loggedIn(address, clientID: "leaving", as: "erin")
            #expect(try await events.next(within: .seconds(10)).kind == .began)
            try await client.send(.goAway(Frame.GoAway(code: .ok, reason: "bye")))
            let event = try await events.next(within: .seconds(10), "erin's session to end")
            #expect(event.kind == .ended(.closedByClient))
            #expect(!server.isConnected("erin"))
        }
    }

    @Test func aLoginElsewhereEndsTheOldSessionWithItsGoAway() async throws {
        try await withPresenceServer { server, address, events in
            let old = try await FrameClient.connect(to: address)
            _ = try await old.handshake(clientID: "old-phone")
            _ = try await old.call("login.exclusive", bytes("carol"), id: "l1")
            #expect(try await events.next(within: .seconds(10)).kind == .began)
            let new = try await FrameClient.connect(to: address)
            _ = try await new.handshake(clientID: "new-phone")
            _ = try await new.call("login.exclusive", bytes("carol"), id: "l2")
            var seen: [SessionEvent] = []
            for _ in 0..<2 { seen.append(try await events.next(within: .seconds(10))) }
            #expect(
                seen.contains {
                    $0.clientID == "old-phone"
                        && $0.kind == .ended(.goAway(code: .unauthenticated, reason: "logged in elsewhere"))
                })
            #expect(seen.contains { $0.clientID == "new-phone" && $0.kind == .began })
            #expect(server.sessions(of: "carol") == 1)
        }
    }

    @Test func aReaderThatFallsBehindLosesTheOldestAndTheyAreCounted() async throws {
        var configuration = ServerConfiguration.testing
        configuration.sessionEventBuffer = 2
        var router = Probe().router()
        router.register("noop") { _, _ in [] }
        let server = LongLinkServer(configuration: configuration, router: router)
        let unread = server.sessionEvents()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let address = try await server.localAddress
            for n in 0..<5 { _ = try await FrameClient.loggedIn(address, clientID: "c\(n)", as: "user\(n)") }
            #expect(server.statistics.sessionEventsDropped == 3)
            // The newest two are what is left to read.
            var iterator = unread.makeAsyncIterator()
            let left = [await iterator.next()?.principal, await iterator.next()?.principal]
            #expect(left == ["user3", "user4"])
            server.shutdown()
            try await group.waitForAll()
            // The stream ends with the server (after the ends of the sessions it closed).
            while await iterator.next() != nil {}
        }
    }
}

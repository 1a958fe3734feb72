import LongLinkServer
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import longlink

/// The demo server's rooms and users: bounded, and forgotten with the connections that made them
/// (once, 100 `room.enter` with 2 MiB names grew `longlink serve` from 67 to 481 MiB, kept).
@Suite("Demo rooms and users", .sharedMachine)
struct DemoRoomsTests {
    /// Runs the demo service on a server of its own around `body`.
    private func withDemoServer(
        _ service: DemoService = DemoService(), _ body: (DemoService, SocketAddress) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        service.prepare(&configuration)
        let server = LongLinkServer(configuration: configuration, router: service.router())
        service.attach(to: server)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            do {
                try await body(service, try await server.localAddress)
            } catch {
                server.shutdown()
                try? await group.waitForAll()
                throw error
            }
            server.shutdown()
            try await group.waitForAll()
        }
    }

    private func connect(_ address: SocketAddress, _ clientID: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: clientID)
        return client
    }

    private func enter(_ room: Int, _ user: String) -> String {
        #"{"room":\#(room),"user":"\#(user)"}"#
    }

    @Test func aRoomIsForgottenWhenItsLastMemberLeaves() async throws {
        try await withDemoServer { service, address in
            let alice = try await connect(address, "alice-phone")
            let bob = try await connect(address, "bob-phone")
            #expect(try await alice.call("room.enter", enter(7, "alice"), id: "1").status == nil)
            #expect(try await bob.call("room.enter", enter(7, "bob"), id: "1").status == nil)
            #expect(service.members(ofRoom: 7) == ["alice", "bob"])

            // Alice's connection closes: she leaves with it.
            alice.close()
            try await eventually("alice left room 7") { service.members(ofRoom: 7) == ["bob"] }
            // Bob leaves: the room is gone.
            let left = try await bob.call("room.leave", enter(7, "bob"), id: "2")
            #expect(left.status == nil && left.text.contains(#""members":[]"#), "\(left.text)")
            #expect(service.members(ofRoom: 7).isEmpty)
            #expect(try await bob.call("room.say", #"{"room":7,"text":"anyone?","user":"bob"}"#, id: "3").status?.code
                == .notFound)
            #expect(service.directory.roomCount == 0 && service.directory.bytes == 0)
        }
    }

    @Test func aUserIsForgottenWhenItsSessionEnds() async throws {
        try await withDemoServer { service, address in
            let carol = try await connect(address, "carol-phone")
            #expect(try await carol.call("login", "carol", id: "1").status == nil)
            #expect(try await carol.call("quotes.subscribe", #"["AAPL","MSFT"]"#, id: "2").status == nil)
            #expect(service.loggedInPrincipals == ["carol"])
            #expect(service.watchLists().map(\.symbols) == [["AAPL", "MSFT"]])

            carol.close()
            try await eventually("carol is forgotten") { service.loggedInPrincipals.isEmpty }
            #expect(service.watchLists().isEmpty)
            #expect(service.directory.userCount == 0 && service.directory.bytes == 0)
        }
    }

    @Test func namesLongerThanTheBoundAreRefused() async throws {
        try await withDemoServer { service, address in
            let client = try await connect(address, "names")
            let longest = String(repeating: "n", count: 256)
            #expect(try await client.call("room.enter", enter(1, longest), id: "1").status == nil)
            // The reproduction's 2 MiB name, and one byte over the bound.
            for (id, name) in [("2", String(repeating: "x", count: 2 << 20)), ("3", longest + "n")] {
                let refused = try await client.call("room.enter", enter(1, name), id: id)
                #expect(refused.status?.code == .invalidArgument)
            }
            #expect(service.members(ofRoom: 1).map(\.utf8.count) == [256])  // counts: a failure prints no 2 MiB
            #expect(service.directory.bytes == 256)
        }
    }

    /// Past a bound the request that would grow the state is refused: nothing held is dropped to
    /// make room, and a closed connection gives its share back.
    @Test func roomsAndUsersAreBoundedByCountAndBytes() async throws {
        var limits = DemoDirectory.Limits()
        limits.maxRooms = 2
        limits.maxUsers = 1
        limits.maxBytes = 64
        try await withDemoServer(DemoService(limits: limits)) { service, address in
            let first = try await connect(address, "first")
            #expect(try await first.call("room.enter", enter(1, "alice"), id: "1").status == nil)
            #expect(try await first.call("room.enter", enter(2, "alice"), id: "2").status == nil)
            let third = try await first.call("room.enter", enter(3, "alice"), id: "3")
            #expect(third.status?.code == .resourceExhausted)
            #expect(try await first.call("login", "dave", id: "4").status == nil)

            let second = try await connect(address, "second")
            #expect(try await second.call("login", "erin", id: "1").status?.code == .resourceExhausted)
            // Bytes: 64 in all; 10 held by two "alice"s and 4 by "dave".
            let big = String(repeating: "b", count: 51)
            #expect(try await second.call("room.enter", enter(1, big), id: "2").status?.code == .resourceExhausted)
            #expect(service.members(ofRoom: 1) == ["alice"] && service.members(ofRoom: 2) == ["alice"])
            #expect(service.loggedInPrincipals == ["dave"])

            first.close()
            try await eventually("the first connection's share is back") { service.directory.bytes == 0 }
            #expect(try await second.call("login", "erin", id: "3").status == nil)
            #expect(try await second.call("room.enter", enter(3, "erin"), id: "4").status == nil)
        }
    }
}

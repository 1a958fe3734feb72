import Foundation
import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

// The README's Quick start types, as it writes them.

struct EnterRoom: LongLinkRequest, Encodable {  // the method name and the reply type, in one place
    typealias Reply = Room
    static let method = "room.enter"
    var room: Int
    var user: String
}
struct Room: Decodable, Sendable { var room: Int; var members: [String] }
struct Alert: Decodable, Sendable { var symbol: String; var price: Double }

extension LongLinkClient {  // the two lines of the headline, in three
    func enterRoom(_ request: EnterRoom) async throws -> LongLinkSubscription<Room> { try await subscribe(request) }
    var alerts: AsyncStream<Alert> { pushes(topic: "alerts", as: Alert.self) }
}

/// The headline as an app writes it, `enterRoom` then `for await alert in client.alerts`,
/// against two real servers behind fault proxies: the link is cut twice and the client fails
/// over once, and the room is entered again each time while every reliable alert arrives once
/// and the loop never ends or notices.
@Suite(.sharedMachine) struct HeadlineTests {
    @Test func theRoomIsEnteredAgainAndEveryAlertArrivesOnceAcrossCutsAndAFailover() async throws {
        let rooms = try await RoomServers.start(2, latencies: [.zero, .milliseconds(20)])
        let running = RunningClient(.forRooms(rooms.endpoints))
        let client = running.client
        let received = Mailbox<Alert>()
        let loopEnded = Mailbox<Void>()
        let consumer = Task {
            for await alert in client.alerts { received.put(alert) }
            loopEnded.put(())
        }
        let room = try await client.enterRoom(EnterRoom(room: 42, user: "alice"))
        #expect(room.members == ["alice"])
        // The server the room is entered on: a loaded machine's probes may prefer either, and a
        // cut link may come back on either.
        var current = 0
        var sent = 0
        // Stored in the servers' shared store, delivered by whichever holds the link.
        func publish(_ count: Int) async throws {
            let server = try #require(rooms.server(0) ?? rooms.server(1))
            for _ in 0..<count {
                sent += 1
                let alert = #"{"symbol":"AAPL","price":\#(sent)}"#
                _ = try await server.push(to: "alice", topic: "alerts", payload: Array(alert.utf8))
            }
        }
        func enteredOn() async throws -> Int {
            let event = try await rooms.next()
            #expect(event.hasPrefix("enter 42 alice s"))
            return event.hasSuffix("s1") ? 1 : 0
        }
        func expectReplay() async throws {
            current = try await enteredOn()
            let replays = room.replays
            let replayed = try await within(.seconds(20), "the room's replay") {
                for await outcome in replays { return try outcome.get() }
                throw ConditionTimedOut(what: "the room's replay (its stream ended)")
            }
            #expect(replayed.room == 42 && replayed.members == ["alice"])
        }

        current = try await enteredOn()
        try await publish(10)
        await rooms.proxies[current].apply(.cut)
        try await expectReplay()
        try await publish(10)
        await rooms.proxies[current].apply(.cut)
        try await expectReplay()
        try await publish(10)
        let crashed = current
        await rooms.servers[crashed].crash()
        try await expectReplay()
        #expect(current != crashed)
        try await publish(10)

        var prices: [Int] = []
        while prices.count < sent { prices.append(Int(try await received.next(within: .seconds(20)).price)) }
        #expect(prices.sorted() == Array(1...sent))
        #expect(Set(prices).count == sent)
        // Nothing more comes (a duplicate would follow the last one): a marker request round trip
        // through the new server and its push stream.
        _ = try await client.request("record", payload: bytes("marker"))
        #expect(try await rooms.next() == "record marker s\(current)")
        #expect(received.count == 0)
        #expect(loopEnded.count == 0)
        await running.stop()
        try await loopEnded.next(within: .seconds(20), "the loop to end at shutdown")
        _ = await consumer.result
        await rooms.stop()
    }
}

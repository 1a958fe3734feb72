// One contract, declared once (here, as an app would in a module both sides import) and used by a
// real server and a real client on loopback through their public API alone: the types both
// modules re-export are one type, so this file names them with nothing but `import LongLink` and
// `import LongLinkServer`.
import Foundation
import LongLink
import LongLinkServer
import Testing

// MARK: - The contract

struct EnterRoom: LongLinkRequest, Codable {
    typealias Reply = Room
    static let method = "room.enter"
    var room: Int
    var user: String
}

struct Room: Codable, Sendable, Equatable {
    var room: Int
    var members: [String]
}

/// Answered by a synchronous typed route.
struct Whoami: LongLinkRequest, Codable {
    typealias Reply = String
    static let method = "whoami"
}

struct Alert: Codable, Sendable, Equatable {
    var symbol: String
    var price: Double
}

enum Alerts: LongLinkTopic {
    typealias Message = Alert
    static let name = "alerts"
    static let kind = TopicKind.reliable
}

enum Ticks: LongLinkTopic {
    typealias Message = Alert
    static let name = "ticks"
    static let kind = TopicKind.bestEffort
}

/// A family of topics, one per symbol.
enum Fills: LongLinkTopic {
    typealias Message = Alert
    static let name = "fills.*"
    static let kind = TopicKind.reliable
}

/// A codec that is not JSON: JSON behind a two-byte tag, refused without it.
struct TaggedCodec: PayloadCodec {
    static let tag: [UInt8] = [0xC0, 0xDE]
    struct Untagged: Error {}

    func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        Self.tag + (try JSONPayloadCodec().encode(value))
    }

    func decode<Value: Decodable>(_ type: Value.Type, from payload: [UInt8]) throws -> Value {
        guard payload.starts(with: Self.tag) else { throw Untagged() }
        return try JSONPayloadCodec().decode(type, from: Array(payload.dropFirst(Self.tag.count)))
    }
}

// MARK: - The tests

@Suite("One contract for client and server", .timeLimit(.minutes(2)))
struct ContractTests {
    /// A router for the contract: `room.enter` (async) and `whoami` (synchronous), both typed.
    private static func contractRouter() -> Router {
        var router = Router()
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        router.register(EnterRoom.self) { request, context in
            Room(room: request.room, members: [request.user, context.principal ?? "?"])
        }
        router.register(Whoami.self, synchronous: { _, context in context.principal ?? "" })
        return router
    }

    /// Runs a server with `router` and a client logged in as alice, both with `codec`, around `body`.
    private func withContract(
        codec: any PayloadCodec = JSONPayloadCodec(), router: Router = contractRouter(),
        _ body: (LongLinkServer, LongLinkClient) async throws -> Void
    ) async throws {
        var serverConfiguration = ServerConfiguration()
        serverConfiguration.codec = codec
        let server = LongLinkServer(configuration: serverConfiguration, router: router)
        let serverTask = Task { try await server.run() }
        defer { server.shutdown() }
        let address = try await server.localAddress
        var configuration = ClientConfiguration(endpoints: [.tcp(host: address.host, port: address.port ?? 0)])
        configuration.codec = codec
        configuration.login = { session in _ = try await session.request("login", payload: Array("alice".utf8)) }
        try await withLongLinkClient(configuration: configuration) { client in
            try await body(server, client)
        }
        server.shutdown()
        try await serverTask.value
    }

    @Test func aTypedRequestRoundTripsThroughRegisterOfItsType() async throws {
        try await withContract { _, client in
            let room = try await client.send(EnterRoom(room: 42, user: "bob"))
            #expect(room == Room(room: 42, members: ["bob", "alice"]))
            #expect(try await client.send(Whoami()) == "alice")
        }
    }

    @Test func aReliableTopicIsPublishedTypedAndReceivedTyped() async throws {
        try await withContract { server, client in
            var alerts = client.pushes(Alerts.self).makeAsyncIterator()
            _ = try await client.send(Whoami())  // logged in: the principal has a session
            let seq = try await server.publish(Alerts.self, Alert(symbol: "AAPL", price: 190), to: "alice")
            #expect(seq > 0)
            #expect(await alerts.next() == Alert(symbol: "AAPL", price: 190))
        }
    }

    @Test func aBestEffortTopicIsSentWithoutStoringIt() async throws {
        try await withContract { server, client in
            var ticks = client.pushes(Ticks.self).makeAsyncIterator()
            _ = try await client.send(Whoami())
            // Best effort: sent again until one arrives (each is dropped only where a link is not
            // writable); the suite's time limit bounds the wait.
            let producer = Task {
                while !Task.isCancelled {
                    #expect(try await server.publish(Ticks.self, Alert(symbol: "MSFT", price: 1), to: "alice") == 0)
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            defer { producer.cancel() }
            #expect(await ticks.next() == Alert(symbol: "MSFT", price: 1))
            #expect(server.statistics.reliablePushesStored == 0)
        }
    }

    @Test func aFamilyOfTopicsIsPublishedByMemberAndReceivedByPattern() async throws {
        try await withContract { server, client in
            var every = client.pushes(Fills.self).makeAsyncIterator()
            var msft = client.pushes(Fills.topic("MSFT")).makeAsyncIterator()
            _ = try await client.send(Whoami())
            try await server.publish(Fills.topic("AAPL"), Alert(symbol: "AAPL", price: 1), to: "alice")
            try await server.publish(Fills.topic("MSFT"), Alert(symbol: "MSFT", price: 2), to: "alice")
            #expect(await every.next()?.symbol == "AAPL")
            #expect(await every.next()?.symbol == "MSFT")
            #expect(await msft.next()?.symbol == "MSFT")
            #expect(Fills.topic("MSFT").text == "fills.MSFT")

            for name in [Fills.topic(), Fills.topic("A.B"), Fills.topic("A", "B"), Fills.topic("*"), Fills.topic("")] {
                await #expect(throws: LongLinkError.self) {
                    try await server.publish(name, Alert(symbol: "X", price: 0), to: "alice")
                }
            }
            let family = await #expect(throws: LongLinkError.self) {
                try await server.publish(Fills.self, Alert(symbol: "X", price: 0), to: "alice")
            }
            #expect(family?.code == .invalidArgument)
        }
    }

    @Test func aConfiguredCodecIsUsedOnBothSides() async throws {
        try await withContract(codec: TaggedCodec()) { server, client in
            let raw = client.pushes(topic: "alerts")
            var typed = client.pushes(Alerts.self).makeAsyncIterator()
            #expect(try await client.send(EnterRoom(room: 7, user: "bob")).members == ["bob", "alice"])
            // The server decodes with the tagged codec: JSON alone does not decode.
            let json = try JSONPayloadCodec().encode(EnterRoom(room: 7, user: "bob"))
            let refused = await #expect(throws: LongLinkError.self) {
                try await client.request(EnterRoom.method, payload: json)
            }
            #expect(refused?.code == .invalidArgument)

            try await server.publish(Alerts.self, Alert(symbol: "TSLA", price: 3), to: "alice")
            #expect(await typed.next() == Alert(symbol: "TSLA", price: 3))
            var rawPushes = raw.makeAsyncIterator()
            let push = try #require(await rawPushes.next())
            #expect(push.payload.starts(with: TaggedCodec.tag))
            #expect(try client.decode(push, as: Alerts.self) == Alert(symbol: "TSLA", price: 3))
            #expect(try client.decode(push, as: Alert.self) == Alert(symbol: "TSLA", price: 3))
        }
    }

    @Test func aRequestThatDoesNotDecodeIsAnsweredWithATypedError() async throws {
        try await withContract { _, client in
            let error = await #expect(throws: LongLinkError.self) {
                try await client.request(EnterRoom.method, payload: Array("not json".utf8))
            }
            #expect(error?.code == .invalidArgument)
            let message = error?.message ?? ""
            #expect(message.contains("room.enter"), "\(message)")
            #expect(message.contains("EnterRoom"), "\(message)")
            // The server is still serving.
            let again = try await client.send(EnterRoom(room: 1, user: "bob"))
            #expect(again.room == 1)
        }
    }
}

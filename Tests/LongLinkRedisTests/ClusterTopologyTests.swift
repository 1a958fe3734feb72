import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// `CLUSTER SHARDS` replies, in the layout redis-server 7.0.15 sends (RESP3 maps, RESP2 flat
/// name-value arrays), parsed into the slot map; hostile ones refused with a typed error.
@Suite(.sharedMachine) struct ClusterTopologyTests {
    typealias NodeSpec = (id: String, port: Int, role: String, health: String)

    /// The bytes redis-server 7.0.15 sends for `shards` (as recorded from a three-primary cluster).
    static func reply(resp3: Bool, _ shards: [(slots: [Int], nodes: [NodeSpec])]) -> [UInt8] {
        func bulk(_ text: String) -> String { "$\(text.utf8.count)\r\n\(text)\r\n" }
        var text = "*\(shards.count)\r\n"
        for shard in shards {
            text += resp3 ? "%2\r\n" : "*4\r\n"
            text += bulk("slots") + "*\(shard.slots.count)\r\n" + shard.slots.map { ":\($0)\r\n" }.joined()
            text += bulk("nodes") + "*\(shard.nodes.count)\r\n"
            for node in shard.nodes {
                text += resp3 ? "%7\r\n" : "*14\r\n"
                text += bulk("id") + bulk(node.id) + bulk("port") + ":\(node.port)\r\n" + bulk("ip") + bulk("127.0.0.1")
                text += bulk("endpoint") + bulk("127.0.0.1") + bulk("role") + bulk(node.role)
                text += bulk("replication-offset") + ":546\r\n" + bulk("health") + bulk(node.health)
            }
        }
        return Array(text.utf8)
    }

    static let threePrimaries: [(slots: [Int], nodes: [NodeSpec])] = [
        ([5461, 10922], [("a773", 17002, "master", "online"), ("f012", 17006, "replica", "online")]),
        ([10923, 16383], [("3f76", 17003, "master", "online"), ("5ad4", 17004, "replica", "loading")]),
        ([0, 5460], [("d06f", 17001, "master", "online"), ("0e3f", 17005, "replica", "online")]),
    ]

    static func parse(_ bytes: [UInt8]) throws -> ClusterTopology {
        var parser = RESPParser()
        parser.append(bytes)
        let value = try #require(try parser.next())
        return try ClusterTopology(shardsReply: value)
    }

    @Test(arguments: [true, false]) func recordedRepliesGiveTheSlotMap(resp3: Bool) throws {
        let topology = try Self.parse(Self.reply(resp3: resp3, Self.threePrimaries))
        #expect(topology.shards.count == 3)
        #expect(topology.primary(forSlot: 0)?.port == 17001)
        #expect(topology.primary(forSlot: 5460)?.port == 17001)
        #expect(topology.primary(forSlot: 5461)?.port == 17002)
        #expect(topology.primary(forSlot: 16383)?.port == 17003)
        #expect(topology.primary(forSlot: 16384) == nil && topology.primary(forSlot: -1) == nil)
        #expect(topology.shards[1].replicas.map(\.port) == [17004])
        #expect(topology.shards[1].replicas.first?.isHealthy == false)
        #expect(topology.primary(forSlot: 0)?.id == "d06f" && topology.primary(forSlot: 0)?.host == "127.0.0.1")
    }

    @Test func uncoveredSlotsHaveNoPrimaryAndAShardWithoutSlotsIsLeftOut() throws {
        let topology = try Self.parse(
            Self.reply(
                resp3: true,
                [
                    ([0, 99, 200, 299], [("a", 7000, "master", "online")]),
                    ([], [("b", 7001, "master", "online")]),
                ]))
        #expect(topology.shards.count == 1)
        #expect(topology.primary(forSlot: 50)?.port == 7000 && topology.primary(forSlot: 250)?.port == 7000)
        #expect(topology.primary(forSlot: 150) == nil && topology.primary(forSlot: 300) == nil)
    }

    @Test func duringAFailoverTheHealthyPrimaryWins() throws {
        let topology = try Self.parse(
            Self.reply(
                resp3: true, [([0, 16383], [("old", 7000, "master", "fail"), ("new", 7001, "master", "online")])]))
        #expect(topology.primary(forSlot: 1)?.id == "new")
    }

    @Test func movingASlotPointsItAtAnotherKnownPrimary() throws {
        let topology = try Self.parse(Self.reply(resp3: true, Self.threePrimaries))
        let moved = try #require(topology.moving(slot: 0, to: .init(host: "127.0.0.1", port: 17003)))
        #expect(moved.primary(forSlot: 0)?.port == 17003 && moved.primary(forSlot: 1)?.port == 17001)
        #expect(topology.moving(slot: 0, to: .init(host: "127.0.0.1", port: 9)) == nil)
    }

    @Test func hostileRepliesAreTypedErrors() {
        let node = RESPValue.map([
            .init(key: .bulkString(Array("id".utf8)), value: .bulkString(Array("n".utf8))),
            .init(key: .bulkString(Array("port".utf8)), value: .integer(7000)),
            .init(key: .bulkString(Array("ip".utf8)), value: .bulkString(Array("127.0.0.1".utf8))),
            .init(key: .bulkString(Array("role".utf8)), value: .bulkString(Array("master".utf8))),
        ])
        func shard(_ slots: [RESPValue], nodes: [RESPValue] = [node]) -> RESPValue {
            .map([
                .init(key: .bulkString(Array("slots".utf8)), value: .array(slots)),
                .init(key: .bulkString(Array("nodes".utf8)), value: .array(nodes)),
            ])
        }
        func withPort(_ port: RESPValue) -> RESPValue {
            guard case .map(var pairs) = node else { return node }
            pairs[1].value = port
            return .map(pairs)
        }
        let hostile: [(String, RESPValue)] = [
            ("not an array", .integer(1)),
            ("an error", .simpleError(Array("ERR unknown command".utf8))),
            ("a shard that is a number", .array([.integer(3)])),
            ("odd slot list", .array([shard([.integer(0)])])),
            ("slot past the end", .array([shard([.integer(0), .integer(16384)])])),
            ("negative slot", .array([shard([.integer(-1), .integer(5)])])),
            ("reversed range", .array([shard([.integer(9), .integer(5)])])),
            ("slot not a number", .array([shard([.bulkString(Array("x".utf8)), .integer(5)])])),
            (
                "overlapping shards",
                .array([shard([.integer(0), .integer(10)]), shard([.integer(10), .integer(20)])])
            ),
            ("port zero", .array([shard([.integer(0), .integer(1)], nodes: [withPort(.integer(0))])])),
            ("port too large", .array([shard([.integer(0), .integer(1)], nodes: [withPort(.integer(70000))])])),
            ("node without fields", .array([shard([.integer(0), .integer(1)], nodes: [.array([])])])),
            ("node list missing", .array([.map([.init(key: .bulkString(Array("slots".utf8)), value: .array([]))])])),
            ("odd flat node", .array([shard([.integer(0), .integer(1)], nodes: [.array([.integer(1)])])])),
        ]
        for (name, value) in hostile {
            do throws(LongLinkError) {
                _ = try ClusterTopology(shardsReply: value)
                Issue.record("\(name) parsed")
            } catch {
                #expect(error.code == .protocolViolation, "\(name)")
            }
        }
    }
}

import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// The hash slot of a key: CRC16 (XMODEM) of its hash tag, modulo 16384.
@Suite(.sharedMachine) struct ClusterSlotTests {
    @Test func crc16IsXmodem() {
        // The Redis Cluster specification's check value for "123456789".
        #expect(ClusterSlot.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(ClusterSlot.crc16([]) == 0)
    }

    /// `CLUSTER KEYSLOT` answers recorded from redis-server 7.0.15 (`cluster-enabled yes`).
    @Test func slotsMatchRedis() {
        let recorded: [(String, Int)] = [
            ("foo", 12182), ("bar", 5061), ("hello", 866), ("123456789", 12739),
            ("{user1000}.following", 3443), ("{p:alice}:c", 12034), ("", 0),
            // An empty tag: the whole key is hashed.
            ("{}foo", 9500), ("foo{}{bar}", 8363),
            // Only the first `{` and the first `}` after it count.
            ("foo{{bar}}zap", 4015), ("foo{bar}{zap}", 5061),
            // No closing brace: the whole key.
            ("a{b", 13340),
        ]
        for (key, slot) in recorded {
            #expect(ClusterSlot.of(Array(key.utf8)) == slot, "\(key)")
        }
    }

    @Test func aPrincipalsKeysShareOneSlot() {
        let keys = RedisKeys(prefix: "longlink:")
        let names = [
            keys.meta(principal: "alice"), keys.stream(principal: "alice"), keys.channel(principal: "alice"),
            keys.session(principal: "alice"), keys.dedupe(principal: "alice", clientID: "c{1}", requestID: "r:2"),
            keys.dedupeLineage(principal: "alice"),
        ]
        let slots = Set(names.map { ClusterSlot.of(Array($0.utf8)) })
        #expect(slots.count == 1)
        #expect(slots.first == ClusterSlot.of(Array("p:alice".utf8)))
    }

    /// The lineage record the claim script reads sits in the slot of the entries it guards, with
    /// or without a principal, and is no entry's name; it is the slot's, shared by every principal
    /// there, so that an idle principal still finds it.
    @Test func aDedupeLineageRecordSharesItsEntriesSlot() {
        let keys = RedisKeys(prefix: "longlink:")
        for principal in ["alice", "b}o:b{", nil] as [String?] {
            let entry = keys.dedupe(principal: principal, clientID: "c}{:%", requestID: "9")
            let record = keys.dedupeLineage(principal: principal)
            #expect(ClusterSlot.of(Array(record.utf8)) == ClusterSlot.of(Array(entry.utf8)), "\(record)")
            #expect(record != entry)
            #expect(!record.contains(":d:"))
        }
    }

    /// Every slot has a tag of its own that hashes to it.
    @Test func everySlotHasATag() {
        for slot in 0..<ClusterSlot.count {
            #expect(ClusterSlot.of(Array("{\(ClusterSlot.tag(of: slot))}:l".utf8)) == slot)
        }
    }

    /// Before a login the hash tag is one the client does not choose: every client id's entries
    /// go to the same slot (and share the anonymous budget).
    @Test func noClientChoosesTheSlotOfItsEntriesBeforeALogin() {
        let keys = RedisKeys(prefix: "longlink:")
        let slots = Set(
            ["c1", "c2", "{p:alice}", "x}{", "zzzz"].map { client in
                ClusterSlot.of(Array(keys.dedupe(principal: nil, clientID: client, requestID: "1").utf8))
            })
        #expect(slots.count == 1)
        #expect(keys.dedupe(principal: nil, clientID: "c1", requestID: "1") == "longlink:{a}:d:c1:1")
    }
}

import Foundation
import LongLinkTestSupport
import LongLinkWire
import Testing

/// `longlink serve --data-dir` killed, its write-ahead log then cut at a random offset (a torn
/// write), and started again on it: the store opens, keeps a prefix of what was committed, says
/// so in its log, and never numbers a new push with a seq a client has seen in the same epoch.
@Suite("longlink serve --data-dir: torn write-ahead log", .sharedMachine)
struct DurableTornWALTests {
    /// Pushes stored before the kill, one transaction (at least) each.
    static let stored = 30
    /// The cuts: fixed seeds, so a failure repeats.
    static let seeds: [UInt64] = [1, 2, 3, 4, 5]

    /// SplitMix64: a reproducible offset from a seed.
    static func random(_ seed: UInt64) -> UInt64 {
        var z = seed &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A raw client logged in as `user` on `port`, with a `Sync` sent: stored pushes flow to it.
    static func connect(port: Int, clientID: String, user: String = "bob") async throws -> FrameClient {
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        _ = try await client.handshake(clientID: clientID)
        #expect(try await client.call("login", user, id: "login").status == nil)
        try await client.send(.sync(Frame.Sync()))
        return client
    }

    /// Emits one reliable push on `topic`; its seq.
    static func emit(_ client: FrameClient, topic: String, id: String) async throws -> UInt64 {
        let response = try await client.call("emit", #"{"topic":"\#(topic)","n":1,"reliable":true}"#, id: id)
        let object = try DurableServe.object(response.payload)
        let seq = try #require(
            object["first_seq"] as? Int, "emit \(topic): \(object) \(String(describing: response.status))")
        return UInt64(seq)
    }

    @Test func aTornLogLosesOnlyItsTailAndNeverReusesASeq() async throws {
        let original = try TemporaryDirectory("durable-torn")
        let server = try await ServeProcess.start(dataDirectory: original.path)
        let producer = try await Self.connect(port: server.port, clientID: "torn-producer")
        var highest: UInt64 = 0
        for index in 1...Self.stored {
            highest = max(highest, try await Self.emit(producer, topic: "t.\(index)", id: "e\(index)"))
        }
        // Seen by the client: its epoch, and seqs up to `highest`; none acknowledged.
        let epoch = try await producer.push(topic: "t.1").epoch
        producer.close()
        try await server.kill()

        let files = ["longlink.sqlite", "longlink.sqlite-wal", "longlink.sqlite-shm", "longlink.commits"]
        let walSize = try #require(
            try FileManager.default.attributesOfItem(atPath: original.appending(files[1]))[.size] as? Int)
        #expect(walSize > 32 + 4096, "the log holds the pushes: \(walSize) bytes")
        var kept: [Int] = []
        for seed in Self.seeds {
            let copy = try TemporaryDirectory("durable-torn-\(seed)")
            for file in files where FileManager.default.fileExists(atPath: original.appending(file)) {
                try FileManager.default.copyItem(atPath: original.appending(file), toPath: copy.appending(file))
            }
            let cut = 32 + Int(Self.random(seed) % UInt64(walSize - 32))
            guard truncate(copy.appending(files[1]), off_t(cut)) == 0 else {
                Issue.record("truncate failed: \(errno)")
                continue
            }
            // Not quiet: the store's lines go to the standard output read here.
            let restarted = try await ServeProcess.start(dataDirectory: copy.path, quiet: false)
            let consumer = try await Self.connect(port: restarted.port, clientID: "torn-consumer-\(seed)")
            // A new push: after every stored one in the order the server sends them.
            let newSeq = try await Self.emit(consumer, topic: "new", id: "new")
            let fresh = try await consumer.push(topic: "new")
            let indexes = consumer.heldFrames().compactMap { frame -> Int? in
                guard case .push(let push) = frame, push.topic.hasPrefix("t.") else { return nil }
                return Int(push.topic.dropFirst(2))
            }
            #expect(
                indexes == (0..<indexes.count).map { $0 + 1 },
                "seed \(seed), cut at \(cut) of \(walSize): what is left is a prefix, in order: \(indexes)")
            #expect(fresh.seq == newSeq)
            #expect(
                fresh.epoch != epoch || fresh.seq > highest,
                "seed \(seed), cut at \(cut): the new push is seq \(fresh.seq) in epoch \(fresh.epoch); the client saw up to \(highest) in \(epoch)"
            )
            if indexes.count < Self.stored {
                #expect(
                    restarted.tool.standardOutput.contains("lacks its last"),
                    "seed \(seed): the store says it lost the log's tail: \(restarted.tool.standardOutput)")
            }
            kept.append(indexes.count)
            consumer.close()
            await restarted.stop()
        }
        #expect(kept.contains { $0 < Self.stored }, "some cut lost something: kept \(kept) of \(Self.stored)")
        print(
            "durable torn WAL (\(walSize) bytes): pushes kept per seed \(zip(Self.seeds, kept).map { "\($0.0): \($0.1)" })"
        )
    }
}

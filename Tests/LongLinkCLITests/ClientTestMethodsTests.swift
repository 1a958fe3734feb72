import Foundation
import LongLinkServer
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import longlink

/// `count` and `emit`, the methods `longlink serve` offers for testing a client, over raw frames
/// against the real process.
@Suite("longlink serve: count and emit", .sharedMachine)
struct ClientTestMethodsTests {
    static func object(_ response: Frame.Response) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(response.payload)) as? [String: Any],
            "not a JSON object: \(response.text) (status \(String(describing: response.status)))")
    }

    @Test func countShowsThatAResendWasDeduplicated() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }

        let first = try await FrameClient.connect(host: "127.0.0.1", port: port)
        _ = try await first.handshake(clientID: "counter")
        // Only a logged-in connection's requests are de-duplicated.
        #expect(try await first.call("login", "carol", id: "l1").status == nil)
        let run = try Self.object(try await first.call("count", "{}", id: "r1"))
        #expect(run["request_id"] as? String == "r1")
        #expect(run["runs"] as? Int == 1)
        first.close()

        // After a reconnect, the same client id sends r1 again: the stored reply, no second run.
        let again = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { again.close() }
        _ = try await again.handshake(clientID: "counter")
        #expect(try await again.call("login", "carol", id: "l2").status == nil)
        #expect(try Self.object(try await again.call("count", "", id: "r1"))["runs"] as? Int == 1)
        let asked = try Self.object(try await again.call("count", #"{"request_id":"r1"}"#, id: "q1"))
        #expect(asked["request_id"] as? String == "r1")
        #expect(asked["runs"] as? Int == 1, "r1 ran once")
        #expect(try Self.object(try await again.call("count", #"{"request_id":"q1"}"#, id: "q2"))["runs"] as? Int == 0)

        // Another client may ask about this one's request ids; its own r1 is a different request.
        let other = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { other.close() }
        _ = try await other.handshake(clientID: "checker")
        #expect(try await other.call("login", "dave", id: "l3").status == nil)
        let theirs = try await other.call("count", #"{"request_id":"r1","client_id":"counter"}"#, id: "c1")
        #expect(try Self.object(theirs)["runs"] as? Int == 1)
        #expect(try Self.object(try await other.call("count", "{}", id: "r1"))["runs"] as? Int == 1)

        // A misspelt key is an error, not a run.
        let misspelt = try await other.call("count", #"{"requestId":"r1"}"#, id: "c2")
        #expect(misspelt.status?.code == .invalidArgument)
        #expect(misspelt.status?.message.contains("requestId") == true, "\(String(describing: misspelt.status))")

        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func countSeesASecondRunWithoutDeduplication() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed", "--dedupe-window", "0"])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "no-dedupe")
        #expect(try Self.object(try await client.call("count", "{}", id: "r1"))["runs"] as? Int == 1)
        #expect(try Self.object(try await client.call("count", "{}", id: "r1"))["runs"] as? Int == 2)
        #expect(try Self.object(try await client.call("count", #"{"request_id":"r1"}"#, id: "q"))["runs"] as? Int == 2)
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func emitSendsReliableAndBestEffortPushes() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "emitter")

        let anonymous = try await client.call("emit", #"{"topic":"t"}"#, id: "0")
        #expect(anonymous.status?.code == .unauthenticated)

        _ = try await client.call("login", "dora", id: "1")
        try await client.send(.sync(Frame.Sync()))
        let reply = try Self.object(try await client.call("emit", #"{"topic":"t","n":3,"reliable":true}"#, id: "2"))
        #expect(reply["topic"] as? String == "t")
        #expect(reply["emitted"] as? Int == 3)
        #expect(reply["reliable"] as? Bool == true)
        let firstSeq = try #require(reply["first_seq"] as? Int)
        #expect(reply["last_seq"] as? Int == firstSeq + 2)
        for index in 1...3 {
            let push = try await client.push(topic: "t")
            #expect(push.seq == UInt64(firstSeq + index - 1))
            #expect(push.text == #"{"index":\#(index),"n":3}"#)
        }
        try await client.send(.ack(Frame.Ack(seqs: (0..<3).map { UInt64(firstSeq + $0) })))

        let started = ContinuousClock.now
        let spaced = try Self.object(
            try await client.call("emit", #"{"topic":"b","n":2,"reliable":false,"interval_ms":50}"#, id: "3"))
        #expect(ContinuousClock.now - started >= .milliseconds(50), "the reply waits until both are queued")
        #expect(spaced["emitted"] as? Int == 2)
        #expect(spaced["first_seq"] == nil)
        for index in 1...2 {
            let push = try await client.push(topic: "b")
            #expect(push.seq == 0, "best effort")
            #expect(push.text == #"{"index":\#(index),"n":2}"#)
        }

        for (id, payload) in [
            ("4", #"{"topic":""}"#), ("5", #"{"topic":"t","n":"3"}"#), ("6", #"{"topic":"t","n":0}"#),
            ("7", #"{"topic":"t","reliable":1}"#), ("8", #"{"topic":"t","interval":5}"#), ("9", "[]"),
            ("10", #"{"topic":"t","n":10000,"interval_ms":1000}"#),
        ] {
            let bad = try await client.call("emit", payload, id: id)
            #expect(bad.status?.code == .invalidArgument, "\(payload)")
        }

        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func helpListsEveryMethod() async throws {
        var router = DemoService().router()
        try ClientTestMethods().register(in: &router)
        #expect(router.methods == ServeCommand.methods.map(\.name).sorted())

        let help = try await ToolProcess.run(["serve", "--help"])
        #expect(help.status == 0)
        for method in router.methods {
            #expect(help.lines.contains { $0.hasPrefix("  \(method) ") }, "\(method) is listed")
        }
    }
}

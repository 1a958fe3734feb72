import Foundation
import LongLinkTestSupport
import Testing

/// `longlink subscribe` run as a process against `longlink serve`.
@Suite("longlink subscribe", .sharedMachine)
struct SubscribeCommandTests {
    /// `subscribe` as alice, watching AAPL, with `extra` options.
    static func arguments(port: Int, _ extra: [String]) -> [String] {
        [
            "subscribe", "--endpoint", "127.0.0.1:\(port)", "--login", "login=alice",
            "--subscribe", #"quotes.subscribe=["AAPL"]"#,
        ] + extra
    }

    /// Splits `seq<TAB>topic<TAB>payload`.
    static func fields(_ line: String) throws -> (seq: UInt64, topic: String, payload: String) {
        let parts = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let seq = UInt64(parts[0]) else {
            throw ToolProcess.Failure(description: "not a push line: \(line)")
        }
        return (seq, String(parts[1]), String(parts[2]))
    }

    @Test func printsReliableAlertsAndAcksWhatItPrinted() async throws {
        // A one-cent step makes nearly every price move (every 100 ms) an alert.
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--alert-step", "0.01", "--seed", "3"])
        defer { server.terminate() }

        let first = try await ToolProcess.run(
            Self.arguments(port: port, ["--count", "1", "--topic", "alerts", "--quiet"]), within: .seconds(15))
        #expect(first.status == 0, "stderr: \(first.standardError)")
        #expect(first.standardError.isEmpty)
        #expect(first.lines.count == 1)
        let alert = try Self.fields(try #require(first.lines.first))
        #expect(alert.seq >= 1)
        #expect(alert.topic == "alerts")
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(alert.payload.utf8)) as? [String: Any])
        #expect(payload["symbol"] as? String == "AAPL")
        #expect(payload["id"] as? Int ?? 0 >= 1)

        // Only the printed alert was acknowledged: the next session starts right after it, with the
        // alerts the first one received but never printed.
        let second = try await ToolProcess.run(
            Self.arguments(port: port, ["--count", "2", "--topic", "alerts", "--quiet"]), within: .seconds(15))
        #expect(second.status == 0, "stderr: \(second.standardError)")
        let seqs = try second.lines.map { try Self.fields($0).seq }
        #expect(seqs == [alert.seq + 1, alert.seq + 2])

        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func sigtermStopsGracefully() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet"])
        defer { server.terminate() }
        let subscriber = try ToolProcess(Self.arguments(port: port, ["--topic", "quotes"]))
        defer { subscriber.terminate() }

        let quote = try Self.fields(try await subscriber.firstLine())
        #expect(quote.seq == 0, "quotes are best effort")
        #expect(quote.topic == "quotes")
        #expect(quote.payload.hasPrefix(#"{"symbol":"AAPL","price":"#))

        subscriber.send(SIGTERM)
        let outcome = try await subscriber.waitForExit(within: .seconds(10))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.standardError.contains("longlink subscribe: connected 127.0.0.1:\(port)"))
        #expect(outcome.standardError.contains("SIGTERM: shutting down"))
        #expect(outcome.standardError.contains("stopped (shut down)"))

        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func survivesAServerRestart() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet"])
        defer { server.terminate() }
        let subscriber = try ToolProcess(Self.arguments(port: port, ["--topic", "quotes"]))
        defer { subscriber.terminate() }
        _ = try await subscriber.firstLine()

        // The server goes away (GoAway, reconnect: true) and comes back on the same port, with no
        // memory of alice: the client logs in and replays quotes.subscribe by itself.
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
        let before = try await subscriber.lines(atLeast: 1).count
        let restarted = try await ServeCommandTests.restartServer(onPort: port, ["--quiet"])
        defer { restarted.terminate() }

        let after = try await subscriber.lines(atLeast: before + 3, within: .seconds(15))
        for line in after { #expect(try Self.fields(line).topic == "quotes") }
        #expect(subscriber.standardError.contains("waitingToReconnect"), "\(subscriber.standardError)")

        subscriber.send(SIGINT)
        #expect(try await subscriber.waitForExit(within: .seconds(10)).status == 0)
        restarted.send(SIGTERM)
        #expect(try await restarted.waitForExit().status == 0)
    }

    @Test func enterMakesRunTimeSubscriptionsAndEntersAgainAfterARestart() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet"])
        defer { server.terminate() }
        let subscriber = try ToolProcess(
            Self.arguments(
                port: port,
                [
                    "--topic", "quotes", "--enter", #"room.enter={"room":42,"user":"alice"}"#,
                    "--enter", #"room.enter={"room":7,"user":"alice"}"#,
                ]))
        defer { subscriber.terminate() }
        // One line per room, `entered room.enter: {...}` (the reply's keys in any order).
        func entered(_ prefix: String, room: Int) -> Bool {
            subscriber.standardError.split(separator: "\n").contains {
                $0.hasPrefix("longlink subscribe: \(prefix) room.enter: {") && $0.contains(#""room":\#(room)"#)
                    && $0.contains(#""members":["alice"]"#)
            }
        }
        try await eventually("both rooms entered") { entered("entered", room: 42) && entered("entered", room: 7) }

        // A server with no memory of the rooms: the client enters both again by itself.
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
        let restarted = try await ServeCommandTests.restartServer(onPort: port, ["--quiet"])
        defer { restarted.terminate() }
        try await eventually("both rooms entered again") {
            entered("entered again", room: 42) && entered("entered again", room: 7)
        }

        subscriber.send(SIGINT)
        #expect(try await subscriber.waitForExit(within: .seconds(10)).status == 0)
        restarted.send(SIGTERM)
        #expect(try await restarted.waitForExit().status == 0)
    }

    @Test func aRefusedEnterIsAnError() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let outcome = try await ToolProcess.run(
            Self.arguments(port: port, ["--enter", #"room.enter={"room":1,"user":""}"#, "--quiet"]),
            within: .seconds(10))
        #expect(outcome.status == 1)
        #expect(outcome.standardError.hasPrefix("error: INVALID_ARGUMENT: "), "\(outcome.standardError)")
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func rejectedLoginIsAnError() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let outcome = try await ToolProcess.run(
            ["subscribe", "--endpoint", "127.0.0.1:\(port)", "--login", "login=", "--quiet"], within: .seconds(10))
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("error: UNAUTHENTICATED: login rejected: "), "\(outcome.standardError)")
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }
}

import Foundation
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import longlink

@Suite("longlink serve", .sharedMachine)
struct ServeCommandTests {
    /// Starts `longlink serve` and returns it with the port from its first line.
    static func startServer(_ extra: [String] = []) async throws -> (ToolProcess, Int) {
        let server = try ToolProcess(["serve", "--port", "0"] + extra)
        let line: String
        do {
            line = try await server.firstLine()
        } catch {
            server.terminate()
            throw error
        }
        let prefix = "listening on 127.0.0.1:"
        guard line.hasPrefix(prefix), let port = Int(line.dropFirst(prefix.count)), port > 0 else {
            server.terminate()
            throw ToolProcess.Failure(description: "unexpected first line: \(line)")
        }
        return (server, port)
    }

    /// Starts `longlink serve` again on the `port` a stopped one had, as a restarted process would:
    /// while something else holds the port (another test's server, or a connection's source port:
    /// it is in the kernel's ephemeral range), the start is tried again, for up to `timeout`.
    static func restartServer(onPort port: Int, _ extra: [String] = [], within timeout: Duration = .seconds(10))
        async throws -> ToolProcess
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            let server = try ToolProcess(["serve", "--port", "\(port)"] + extra)
            try await eventually("serve to listen on \(port) or say it cannot") {
                server.standardOutput.contains("\n") || server.standardError.contains("cannot serve on")
            }
            if server.standardOutput.hasPrefix("listening on 127.0.0.1:\(port)\n") { return server }
            server.terminate()
            guard server.standardError.contains("cannot serve on"), ContinuousClock.now < deadline else {
                throw ToolProcess.Failure(
                    description: "serve did not start again on \(port): \(server.standardOutput)\(server.standardError)")
            }
            try await Task.sleep(for: .milliseconds(50))  // a back-off between attempts, not synchronisation
        }
    }

    @Test func rawFrameExchangeThenSIGTERM() async throws {
        let (server, port) = try await Self.startServer([
            "--heartbeat", "20s", "--dedupe-window", "30s", "--server-id", "cli-test", "--seed", "1",
        ])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }

        let welcome = try await client.handshake(clientID: "cli-tests")
        #expect(welcome.version == 1)
        #expect(welcome.serverID == "cli-test")
        #expect(welcome.heartbeatMilliseconds == 20_000)
        #expect(welcome.dedupeWindowMilliseconds == 30_000)

        let echo = try await client.call("echo", "hello", id: "1")
        #expect(echo.status == nil)
        #expect(echo.text == "hello")

        let failed = try await client.call("fail", "5:nope", id: "2")
        #expect(failed.status == Frame.Status(code: .notFound, message: "nope"))
        let named = try await client.call("fail", "PERMISSION_DENIED:no", id: "3")
        #expect(named.status?.code == .permissionDenied)

        let slept = try await client.call("sleep", "20", id: "4")
        #expect(slept.text == "slept")

        let login = try await client.call("login", "alice", id: "5")
        #expect(login.status == nil)
        #expect(try JSONSerialization.jsonObject(with: Data(login.payload)) as? [String: String] == ["user": "alice"])

        let enter = try await client.call("room.enter", #"{"room":42,"user":"alice"}"#, id: "6")
        #expect(enter.status == nil)
        let room = try #require(try JSONSerialization.jsonObject(with: Data(enter.payload)) as? [String: Any])
        #expect(room["room"] as? Int == 42)
        #expect(room["members"] as? [String] == ["alice"])

        // A chat message is a reliable push: it flows after Sync.
        let say = try await client.call("room.say", #"{"room":42,"text":"hi all"}"#, id: "7")
        #expect(say.status == nil, "\(say)")
        #expect(
            try JSONSerialization.jsonObject(with: Data(say.payload)) as? [String: Int] == ["room": 42, "delivered": 1])
        try await client.send(.sync(Frame.Sync()))
        let chat = try await client.push(topic: "room.42")
        #expect(chat.seq >= 1)
        let message = try #require(try JSONSerialization.jsonObject(with: Data(chat.payload)) as? [String: Any])
        #expect(message["user"] as? String == "alice")
        #expect(message["text"] as? String == "hi all")
        try await client.send(.ack(Frame.Ack(seqs: [chat.seq])))

        // The feed sends best-effort quotes for the watch list.
        let watch = try await client.call("quotes.subscribe", #"["AAPL"]"#, id: "8")
        #expect(watch.status == nil)
        let quote = try await client.push(topic: "quotes", within: .seconds(5))
        #expect(quote.seq == 0)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(quote.payload)) as? [String: Any])
        #expect(fields["symbol"] as? String == "AAPL")
        #expect(fields["price"] is Double || fields["price"] is Int)
        #expect(fields["time"] is Int)
        // With --seed 1 the first price of a symbol is the walk's first step for that seed.
        var walk = QuoteWalk(seed: 1)
        #expect(quote.text.contains(#""price":\#(QuoteWalk.format(cents: walk.step("AAPL").cents)),"#), "\(quote.text)")

        let unknown = try await client.call("nope", "", id: "9")
        #expect(unknown.status?.code == .unimplemented)

        server.send(SIGTERM)
        // Graceful shutdown says GoAway to the client first.
        let goAway = try await client.take("GoAway") { if case .goAway = $0 { true } else { false } }
        guard case .goAway(let away) = goAway else { return }
        #expect(away.code == .unavailable)
        #expect(away.reconnect)
        let outcome = try await server.waitForExit(within: .seconds(15))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.lines.first?.hasPrefix("listening on 127.0.0.1:") == true)
        #expect(outcome.standardOutput.contains("login alice"))
        #expect(outcome.standardOutput.contains("SIGTERM"))
    }

    @Test func alertsAreReliablePushes() async throws {
        // A one-cent step makes nearly every price move an alert.
        let (server, port) = try await Self.startServer(["--quiet", "--alert-step", "0.01", "--seed", "3"])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "alerts")
        _ = try await client.call("login", "carol", id: "1")
        _ = try await client.call("quotes.subscribe", #"["MSFT","AAPL","MSFT"]"#, id: "2")
        try await client.send(.sync(Frame.Sync()))
        let alert = try await client.push(topic: "alerts")
        #expect(alert.seq >= 1)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(alert.payload)) as? [String: Any])
        #expect(["AAPL", "MSFT"].contains(fields["symbol"] as? String ?? ""))
        #expect(fields["id"] as? Int ?? 0 >= 1)
        #expect(fields["price"] != nil)
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func sigintShutsDownWithNoClients() async throws {
        let (server, _) = try await Self.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        server.send(SIGINT)
        let outcome = try await server.waitForExit()
        #expect(outcome.status == 0)
        #expect(outcome.lines.count == 1, "--quiet prints only the first line: \(outcome.standardOutput)")
    }

    /// JSON escapes every `/`, so this message is twice its size as a push: too large for the
    /// members' clients. The speaker is told; nothing is stored to jam the members' queues.
    @Test func aMessageTooLargeToPushIsRefused() async throws {
        let (server, port) = try await Self.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "speaker")
        #expect(try await client.call("room.enter", #"{"room":7,"user":"alice"}"#, id: "1").status == nil)
        let slashes = String(repeating: "/", count: 2_100_000)
        let say = try await client.call("room.say", #"{"room":7,"user":"alice","text":"\#(slashes)"}"#, id: "2")
        #expect(say.status?.code == .invalidArgument, "\(String(describing: say.status))")
        #expect(say.status?.message.contains("too large") == true)
        #expect(try await client.call("room.say", #"{"room":7,"user":"alice","text":"hi"}"#, id: "3").status == nil)
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func subscribingNeedsALogin() async throws {
        let (server, port) = try await Self.startServer(["--quiet"])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "anonymous")
        let watch = try await client.call("quotes.subscribe", #"["AAPL"]"#, id: "1")
        #expect(watch.status?.code == .unauthenticated)
        let login = try await client.call("login", "", id: "2")
        #expect(login.status?.code == .unauthenticated)
        let say = try await client.call("room.say", #"{"room":1,"text":"x","user":"bob"}"#, id: "3")
        #expect(say.status?.code == .notFound)
        let badSleep = try await client.call("sleep", "soon", id: "4")
        #expect(badSleep.status?.code == .invalidArgument)
        // The server cancels a sleep whose request timed out, and says so at once.
        let started = ContinuousClock.now
        try await client.send(
            .request(
                Frame.Request(requestID: "5", method: "sleep", payload: Array("60000".utf8), timeoutMilliseconds: 100)))
        let late = try await client.take("the response to 5") {
            if case .response(let response) = $0 { response.requestID == "5" } else { false }
        }
        guard case .response(let response) = late else { return }
        #expect(response.status?.code == .deadlineExceeded)
        // Far from the sleep's 60 s, with room for a loaded machine's stalls.
        #expect(ContinuousClock.now - started < .seconds(20))
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func secondSignalExitsAtOnce() async throws {
        let (server, port) = try await Self.startServer(["--no-feed"])
        defer { server.terminate() }
        let client = try await FrameClient.connect(host: "127.0.0.1", port: port)
        defer { client.close() }
        _ = try await client.handshake(clientID: "impatient")
        // A request in flight keeps the graceful shutdown draining for a while.
        try await client.send(.request(Frame.Request(requestID: "1", method: "sleep", payload: Array("60000".utf8))))
        try await Task.sleep(for: .milliseconds(100))
        server.send(SIGTERM)
        _ = try await client.take("GoAway") { if case .goAway = $0 { true } else { false } }
        server.send(SIGTERM)
        let outcome = try await server.waitForExit(within: .seconds(3))
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("SIGTERM again, exiting now"))
    }

    @Test func portInUseFails() async throws {
        let (first, port) = try await Self.startServer(["--quiet", "--no-feed"])
        defer { first.terminate() }
        let second = try await ToolProcess.run(["serve", "--port", "\(port)"])
        #expect(second.status == 1)
        #expect(second.standardError.contains("cannot serve on 127.0.0.1:\(port)"))
        first.send(SIGTERM)
        #expect(try await first.waitForExit().status == 0)
    }
}

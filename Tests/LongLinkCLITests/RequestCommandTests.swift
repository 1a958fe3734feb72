import Foundation
import LongLinkTestSupport
import LongLinkTransport
import Testing

/// `longlink request` run as a process against `longlink serve`.
@Suite("longlink request", .sharedMachine)
struct RequestCommandTests {
    /// Runs `longlink request --endpoint 127.0.0.1:port …`.
    static func request(port: Int, _ arguments: [String], input: [UInt8] = []) async throws -> ToolProcess.Outcome {
        try await ToolProcess.run(["request", "--endpoint", "127.0.0.1:\(port)"] + arguments, input: input)
    }

    @Test func echoPrintsTheReply() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }

        let echo = try await Self.request(port: port, ["echo", "--data", "hi"])
        #expect(echo.status == 0, "stderr: \(echo.standardError)")
        #expect(echo.standardOutput == "hi\n", "a newline is added to text that has none")
        #expect(echo.standardError.isEmpty)

        // --raw keeps the bytes exactly; --data-file - reads standard input.
        let raw = try await Self.request(port: port, ["echo", "--data-file", "-", "--raw"], input: Array("a\tb".utf8))
        #expect(raw.status == 0)
        #expect(raw.standardOutput == "a\tb")

        // The login step runs before the request: quotes.subscribe needs a logged-in connection.
        let watch = try await Self.request(
            port: port, ["quotes.subscribe", "--data", #"["AAPL"]"#, "--login", "login=bob", "--client-id", "cli-bob"])
        #expect(watch.status == 0, "stderr: \(watch.standardError)")
        #expect(watch.standardOutput == #"{"symbols":["AAPL"]}"# + "\n")

        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func errorStatusExits1() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }

        let failed = try await Self.request(port: port, ["fail", "--data", "5:nope"])
        #expect(failed.status == 1)
        #expect(failed.standardOutput.isEmpty)
        #expect(failed.standardError == "error: NOT_FOUND: nope\n")

        let unknown = try await Self.request(port: port, ["no.such.method"])
        #expect(unknown.status == 1)
        #expect(unknown.standardError.hasPrefix("error: UNIMPLEMENTED: "))

        // The server's own budget (timeout_ms) runs out first, or the client's timer: either way
        // a deadline error, well before the sleep would end.
        let slow = try await Self.request(port: port, ["sleep", "--data", "60000", "--timeout", "300ms"])
        #expect(slow.status == 1)
        #expect(slow.standardError.hasPrefix("error: DEADLINE_EXCEEDED: "), "\(slow.standardError)")
        #expect(slow.runTime < .seconds(10))

        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    /// The server's error text is the server's: an escape sequence in it is printed written out
    /// (never sent to the terminal), and a newline in it cannot forge a line of the tool's own.
    @Test func serverTextIsPrintedWithItsControlCharactersEscaped() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let failed = try await Self.request(port: port, ["fail", "--data", "5:wiped\u{1B}[2J\nerror: forged"])
        #expect(failed.status == 1)
        #expect(failed.standardError == "error: NOT_FOUND: wiped\\x1B[2J\\x0Aerror: forged\n")
        #expect(!failed.standardError.utf8.contains(0x1B))
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func rejectedLoginStopsAtOnce() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        // An empty user name is UNAUTHENTICATED: terminal, not retried until the 10 s timeout.
        let outcome = try await Self.request(port: port, ["echo", "--data", "x", "--login", "login="])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.hasPrefix("error: UNAUTHENTICATED: login rejected: "), "\(outcome.standardError)")
        #expect(outcome.runTime < .seconds(5))
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test func nothingListeningEndsWithinTheTimeout() async throws {
        // A port this test holds and never listens on: connecting is refused, the client keeps
        // retrying, and the request's own timeout ends it. (A port chosen and released could be
        // the next test server's, which then answered this request.)
        let reserved = try ReservedPort()
        defer { reserved.release() }
        let port = reserved.port

        let outcome = try await ToolProcess.run(
            ["request", "--endpoint", "127.0.0.1:\(port)", "echo", "--data", "hi", "--timeout", "300ms"],
            within: .seconds(10))
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("error: DEADLINE_EXCEEDED: "), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("connectionRefused"), "says why: \(outcome.standardError)")
        #expect(outcome.standardError.contains("is down: connection refused;"), "\(outcome.standardError)")
        #expect(outcome.runTime < .seconds(5), "took \(outcome.runTime)")
    }
}

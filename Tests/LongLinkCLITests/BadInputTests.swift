import Foundation
import LongLink
import LongLinkTestSupport
import Synchronization
import Testing

@testable import longlink

/// What `longlink request` and `longlink subscribe` say when the server breaks the protocol and
/// the client recovers: one line on standard error per recovery, even when everything then works.
@Suite("bad server input", .sharedMachine)
struct BadInputTests {
    /// The one line the tools print per recovery; the reason inside is the client's own text.
    static func recoveryLines(_ standardError: String) -> [String] {
        standardError.split(separator: "\n").map(String.init).filter {
            $0.hasPrefix("longlink: the server sent bad input (") && $0.hasSuffix("); reconnected")
                && $0.count > "longlink: the server sent bad input (); reconnected".count
        }
    }

    @Test(arguments: [
        HostileServer.Offence.answerHello(HostileServer.garbage),
        HostileServer.Offence.answerHello(HostileServer.twoGiBPrefix),
        HostileServer.Offence.afterSync(HostileServer.garbage),
    ])
    func requestRecoversAndSaysSo(_ offence: HostileServer.Offence) async throws {
        let server = try await HostileServer.start(offence)
        // Logged in: the request written before the offence goes again (a server de-duplicates
        // nothing made before a login, so without one it would fail, its outcome unknown).
        let outcome = try await ToolProcess.run(
            [
                "request", "--endpoint", "127.0.0.1:\(server.port)", "--login", "login=ada", "echo", "--data", "hi",
                "--timeout", "10s",
            ],
            within: .seconds(20))
        let connections = server.connections
        await server.close()

        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.standardOutput == "hi\n")
        // Exactly one line, and nothing else: no --verbose.
        #expect(Self.recoveryLines(outcome.standardError).count == 1, "stderr: \(outcome.standardError)")
        #expect(outcome.standardError.split(separator: "\n").count == 1, "stderr: \(outcome.standardError)")
        #expect(connections == 2, "the bad link, then the good one")
    }

    @Test func subscribeRecoversAndSaysSoEvenWhenQuiet() async throws {
        let server = try await HostileServer.start(.afterSync(HostileServer.twoGiBPrefix))
        let outcome = try await ToolProcess.run(
            ["subscribe", "--endpoint", "127.0.0.1:\(server.port)", "--count", "1", "--quiet"], within: .seconds(20))
        await server.close()

        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.lines == ["0\tticks\ttick"])
        #expect(Self.recoveryLines(outcome.standardError).count == 1, "stderr: \(outcome.standardError)")
        #expect(outcome.standardError.split(separator: "\n").count == 1, "stderr: \(outcome.standardError)")
    }

    /// Records what a reporter writes.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    static let connected = ConnectionState(phase: .connected, reason: "logged in")
    static let waiting = ConnectionState(phase: .waitingToReconnect, reason: "link down")

    @Test func onlyWarningsAboutTheServerCount() {
        #expect(BadInputReporter.reason(level: .warning, message: "protocol violation by the server: x: y") == "x: y")
        #expect(BadInputReporter.reason(level: .error, message: "protocol violation by the server (z)") == "(z)")
        #expect(BadInputReporter.reason(level: .warning, message: "protocol violation by the server") != nil)
        #expect(BadInputReporter.reason(level: .info, message: "protocol violation by the server: x") == nil)
        #expect(BadInputReporter.reason(level: .warning, message: "link to a:1 is dead: silence") == nil)
    }

    @Test func oneLinePerRecoveryAfterTheDrop() {
        let lines = Lines()
        let reporter = BadInputReporter(write: lines.append)
        // A `connected` read after the violation but sent before it (no drop seen yet) is stale.
        reporter.note(level: .warning, message: "protocol violation by the server: malformed frame: bad")
        reporter.observe(Self.connected)
        #expect(lines.all.isEmpty)
        reporter.observe(Self.waiting)
        #expect(lines.all.isEmpty)
        reporter.observe(ConnectionState(phase: .connecting, reason: "reconnecting"))
        reporter.observe(Self.connected)
        #expect(lines.all == ["longlink: the server sent bad input (malformed frame: bad); reconnected"])
        // A failed attempt carries its error: that is a drop too. Two violations, two lines.
        reporter.note(level: .warning, message: "protocol violation by the server: frame too large: 2147483648")
        reporter.observe(
            ConnectionState(
                phase: .connecting, reason: "attempt failed",
                error: LongLinkError(code: .frameTooLarge, message: "frame too large")))
        reporter.note(level: .warning, message: "protocol violation by the server: malformed frame: again")
        reporter.observe(Self.waiting)
        reporter.observe(Self.connected)
        reporter.observe(Self.connected)
        #expect(
            lines.all.dropFirst()
                == [
                    "longlink: the server sent bad input (frame too large: 2147483648); reconnected",
                    "longlink: the server sent bad input (malformed frame: again); reconnected",
                ])
        reporter.finish()
        #expect(lines.all.count == 3, "nothing left to report")
    }

    @Test func endingBeforeTheReconnectSaysSo() {
        let lines = Lines()
        let reporter = BadInputReporter(write: lines.append)
        reporter.note(level: .warning, message: "protocol violation by the server: malformed frame: bad")
        reporter.observe(Self.waiting)
        reporter.observe(ConnectionState(phase: .stopped, reason: "shut down"))
        reporter.finish()
        #expect(lines.all == ["longlink: the server sent bad input (malformed frame: bad); not reconnected"])
    }
}

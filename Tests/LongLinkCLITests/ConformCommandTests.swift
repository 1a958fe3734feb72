import Foundation
import LongLinkTestSupport
import Testing

@testable import longlink

/// `longlink conform` run as a process: our own server passes every rule, and a peer that breaks
/// one rule on purpose fails exactly that rule, while the same peer behaving passes it.
@Suite("longlink conform", .sharedMachine)
struct ConformCommandTests {
    /// `longlink serve` with its default flags passes every rule: nothing failed, nothing skipped
    /// (its de-duplication window is on by default, so the de-dup rules run too).
    @Test func ourServerPassesEveryRule() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet"])
        defer { server.terminate() }
        let outcome = try await ToolProcess.run(["conform", "--endpoint", "127.0.0.1:\(port)"], within: .seconds(120))
        #expect(outcome.status == 0, "\(outcome.standardOutput)\nstderr: \(outcome.standardError)")
        let lines = outcome.lines
        let count = ConformRule.all.count
        #expect(lines.count == count + 1)
        #expect(lines.dropLast().allSatisfy { $0.hasPrefix("PASS ") }, "\(outcome.standardOutput)")
        #expect(lines.last == "\(count) passed, 0 failed, 0 skipped")
        let ids = lines.dropLast().map { $0.dropFirst(5).prefix { $0 != ":" } }.map(String.init)
        #expect(ids == ConformRule.all.map(\.id))
    }

    /// Rule ids are unique, `area.name`, and every area of the brief is covered.
    @Test func ruleIdsAreUniqueAndGrouped() {
        let ids = ConformRule.all.map(\.id)
        #expect(Set(ids).count == ids.count)
        let areas = Set(ids.map { String($0.prefix { $0 != "." }) })
        #expect(areas == ["handshake", "framing", "heartbeat", "requests", "dedupe", "pushes", "goaway"])
    }

    /// Each fault of the broken peer and the rule it breaks.
    static let faults: [(BrokenPeer.Fault, String)] = [
        (.silentPing, "framing.ping-split"),
        (.wrongNonce, "framing.pings-merged"),
        (.wrongNonce, "framing.unknown-frame-kind-ignored"),
        (.acceptsAnyVersion, "handshake.unsupported-version"),
        (.lenientHandshake, "handshake.first-frame-not-hello"),
        (.lenientHandshake, "handshake.empty-client-id"),
        (.lenientHandshake, "handshake.second-hello"),
        (.refusesUnknownFrames, "framing.empty-frame-ignored"),
        (.refusesUnknownFrames, "framing.unknown-frame-kind-ignored"),
        (.staysOpenAfterGoAway, "framing.wire-type-7"),
        (.answersTwice, "requests.correlation"),
        (.wrongResponseID, "requests.unknown-method"),
        (.ignoresCancel, "requests.cancel"),
        (.ignoresTimeout, "requests.timeout"),
        (.dropsInFlightOnGoAway, "goaway.client-drain"),
        (.runsResendsAgain, "dedupe.replay"),
        (.runsResendsAgain, "dedupe.method-mismatch"),
        (.pushesBeforeSync, "pushes.none-before-sync"),
        (.epochZero, "pushes.ordered-after-sync"),
        (.ignoresAcks, "pushes.redelivery"),
        (.emptyServerID, "handshake.welcome"),
        (.acceptsHugeFrames, "framing.frame-too-large"),
        (.closesWithoutGoAway, "framing.field-number-zero"),
        (.closesWithoutGoAway, "framing.invalid-utf8"),
        (.answersEmptyRequestID, "requests.empty-request-id"),
        (.refusesUnknownFields, "framing.unknown-fields-ignored"),
        (.ignoresHeartbeatProposal, "heartbeat.live-change"),
    ]

    /// Every rule has a broken peer that fails it, so every rule is seen able to fail.
    @Test func everyRuleHasABrokenPeer() {
        #expect(Set(Self.faults.map(\.1)) == Set(ConformRule.all.map(\.id)))
    }

    /// A peer breaking one rule makes that rule FAIL and the command exit 1; the same peer without
    /// its fault passes that rule (so the failure is the fault's, not the peer's).
    @Test(arguments: faults)
    func aBrokenPeerFailsTheRuleItBreaks(fault: BrokenPeer.Fault, rule: String) async throws {
        let broken = try await BrokenPeer.start(fault)
        let outcome = try await ToolProcess.run([
            "conform", "--endpoint", "127.0.0.1:\(broken.port)", "--rule", rule, "--timeout", "2s",
        ])
        await broken.close()
        #expect(outcome.status == 1, "\(outcome.standardOutput)")
        #expect(outcome.lines.first?.hasPrefix("FAIL \(rule): ") == true, "\(outcome.standardOutput)")
        #expect(outcome.lines.last == "0 passed, 1 failed, 0 skipped")

        let behaving = try await BrokenPeer.start(nil)
        let control = try await ToolProcess.run([
            "conform", "--endpoint", "127.0.0.1:\(behaving.port)", "--rule", rule, "--timeout", "2s",
        ])
        await behaving.close()
        #expect(control.status == 0, "\(control.standardOutput)")
        #expect(control.lines.first?.hasPrefix("PASS \(rule): ") == true, "\(control.standardOutput)")
    }

    /// A rule whose method the server answers UNIMPLEMENTED is skipped, naming the method, and a
    /// skip alone does not fail the run.
    @Test func aMissingMethodSkipsItsRule() async throws {
        let broken = try await BrokenPeer.start(.noMethods)
        let outcome = try await ToolProcess.run([
            "conform", "--endpoint", "127.0.0.1:\(broken.port)", "--rule", "requests.cancel", "--rule",
            "requests.correlation", "--timeout", "2s",
        ])
        await broken.close()
        #expect(outcome.status == 0, "\(outcome.standardOutput)")
        #expect(outcome.lines.count == 3)
        #expect(outcome.lines.first?.hasPrefix("SKIP requests.correlation: the server has no 'echo' method") == true)
        #expect(
            outcome.lines.dropFirst().first?.hasPrefix("SKIP requests.cancel: the server has no 'sleep' method") == true
        )
        #expect(outcome.lines.last == "0 passed, 0 failed, 2 skipped")
    }

    /// The behaving peer, a server of our own written from Protocol.md alone with the whole
    /// conformance contract, passes every rule: the checker holds to the protocol, not to
    /// `longlink serve`'s ways.
    @Test func theBehavingPeerPassesEveryRule() async throws {
        let behaving = try await BrokenPeer.start(nil)
        let outcome = try await ToolProcess.run(
            ["conform", "--endpoint", "127.0.0.1:\(behaving.port)", "--timeout", "2s"], within: .seconds(60))
        await behaving.close()
        #expect(outcome.status == 0, "\(outcome.standardOutput)")
        #expect(
            outcome.lines.last == "\(ConformRule.all.count) passed, 0 failed, 0 skipped", "\(outcome.standardOutput)")
    }

    /// Every rule against a peer that never answers a Ping and has none of the contract's methods:
    /// the run ends (every wait is bounded), fails, and prints the totals last; --json says the same.
    @Test func aWholeRunAgainstABrokenPeerEnds() async throws {
        let broken = try await BrokenPeer.start(.silentPing)
        let outcome = try await ToolProcess.run(
            ["conform", "--endpoint", "127.0.0.1:\(broken.port)", "--timeout", "300ms", "--json"], within: .seconds(60))
        await broken.close()
        #expect(outcome.status == 1, "\(outcome.standardOutput)")
        let json = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
        let rules = json?["rules"] as? [[String: Any]] ?? []
        #expect(rules.count == ConformRule.all.count)
        let failed = json?["failed"] as? Int ?? 0
        #expect(failed > 0)
        #expect(rules.first { $0["id"] as? String == "framing.ping-split" }?["result"] as? String == "FAIL")
        #expect((json?["passed"] as? Int ?? 0) + failed + (json?["skipped"] as? Int ?? 0) == rules.count)
    }

    /// A server that announces no de-duplication window skips the de-dup rules, saying why, and
    /// still exits 0.
    @Test func noDedupeWindowSkipsTheDedupeRules() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--dedupe-window", "0"])
        defer { server.terminate() }
        let outcome = try await ToolProcess.run(["conform", "--endpoint", "127.0.0.1:\(port)", "--rule", "dedupe"])
        #expect(outcome.status == 0, "\(outcome.standardOutput)")
        #expect(
            outcome.lines == [
                "SKIP dedupe.replay: Welcome.dedupe_window_ms is 0: the server does not de-duplicate",
                "SKIP dedupe.method-mismatch: Welcome.dedupe_window_ms is 0: the server does not de-duplicate",
                "0 passed, 0 failed, 2 skipped",
            ])
    }

    /// Nobody listening: a message on standard error and status 1, no rule lines.
    @Test func anUnreachableServerExits1() async throws {
        let path = "unix:/tmp/longlink-no-such-server-\(UInt64.random(in: 0...UInt64.max))"
        let outcome = try await ToolProcess.run(["conform", "--endpoint", path, "--timeout", "1s"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.contains("cannot connect"))
    }
}

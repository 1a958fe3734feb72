import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

/// A server de-duplicates only requests made after a login (it binds a principal there), so a
/// call whose link drops between its write and its reply goes again only when a login preceded
/// it. Over a real server behind a fault proxy that holds the reply back and then resets the link.
@Suite("Resends before and after a login, on a real server", .sharedMachine)
struct PreLoginResendTests {
    @Test func withoutALoginACallWhoseReplyWasLostFailsAndRunsOnce() async throws {
        let drop = try await callAcrossADrop(login: false)
        switch drop.outcome {
        case .success(let reply):
            Issue.record("the call was resent and answered '\(text(reply))' instead of failing")
        case .failure(let error):
            #expect((error as? LongLinkError)?.code == .connectionLost, "\(error)")
            #expect((error as? LongLinkError)?.message.contains("before a login") == true, "\(error)")
        }
        #expect(drop.runs == 1, "the handler ran \(drop.runs) times")
        #expect(drop.resends == 0)
    }

    @Test func afterALoginTheCopyIsAnsweredFromTheWindowAndRunsOnce() async throws {
        let drop = try await callAcrossADrop(login: true)
        #expect(text(try drop.outcome.get()) == "execution 1!")
        #expect(drop.runs == 1, "the handler ran \(drop.runs) times")
        #expect(drop.resends == 1)
    }

    /// Calls `count` through a proxy that drops the server's bytes, resets the link once the
    /// handler has run, and returns the call's outcome, how many times the handler ran for it
    /// (read from the next call's reply: `count` answers its execution's number) and the client's
    /// resends.
    private func callAcrossADrop(login: Bool) async throws -> (
        outcome: Result<[UInt8], any Error>, runs: Int, resends: Int
    ) {
        let probe = Probe()
        // The server keeps a de-dup window (the default): a login is all a copy needs.
        let server = try await RunningServer.start(probe: probe)
        let proxy = FaultProxy(upstream: server.endpoint)
        try await proxy.start()
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        if login {
            configuration.login = { session in _ = try await session.request("login", payload: bytes("alice")) }
        }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        let link = try #require(proxy.connections.first)
        // Written, run, and its reply lost with the link.
        await link.blackHole(.downstream)
        let call = Task { try await client.request("count", payload: bytes("!")) }
        try await eventually("the handler to run") { probe.executions.load(ordering: .relaxed) == 1 }
        await link.reset()
        let outcome = try await within(.seconds(20), "the call to end") { await call.result }
        // Nothing of the first call is pending any more: the next execution's number counts its runs.
        let next = text(try await client.request("count"))
        let runs = (Int(next.dropFirst("execution ".count)) ?? 0) - 1
        let resends = await client.statistics.resends
        await running.stop()
        await proxy.stop()
        try await server.stop()
        return (outcome, runs, resends)
    }
}

import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Testing

/// What an app sees when it asks for TLS in a build without OpenSSL (Darwin's, or Linux's with
/// `LONGLINK_NO_OPENSSL`): each attempt fails with `tlsFailure(.unavailable)` in its state, and a
/// request fails rather than hangs.
@Suite(
    "Client without OpenSSL", .sharedMachine, .enabled(if: !TLSContext.isAvailable, "this build has OpenSSL"))
struct TLSUnavailableClientTests {
    @Test("a client asking for TLS reports tlsFailure(.unavailable) and never connects")
    func clientReportsUnavailable() async throws {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.tls = TLSConfiguration.makeClientConfiguration()
        configuration.defaultTimeout = .milliseconds(500)
        let running = RunningClient(configuration)
        let states = running.client.connectionStates
        let reason = try await within(.seconds(20), "a TLS failure") { () -> TLSFailure.Reason? in
            for await state in states {
                #expect(state.phase != .connected)
                if let error = state.error, error.code == .tlsFailure {
                    return (error.underlying as? TLSFailure)?.reason
                }
            }
            return nil
        }
        #expect(reason == .unavailable)
        await #expect(throws: LongLinkError.self) {
            _ = try await running.client.request("echo", payload: [1])
        }
        _ = await running.stop()
        try await server.stop()
    }
}

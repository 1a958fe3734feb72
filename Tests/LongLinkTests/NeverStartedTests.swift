import LongLink
import LongLinkTestSupport
import Testing

@Suite("A client that was never started", .sharedMachine)
struct NeverStartedTests {
    @Test func aCallsDeadlineErrorNamesRun() async throws {
        let client = LongLinkClient(configuration: ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: 1)]))
        do {
            _ = try await client.request("echo", options: RequestOptions(timeout: .milliseconds(50)))
            Issue.record("expected the call to fail")
        } catch let error as LongLinkError {
            #expect(error.code == .deadlineExceeded)
            #expect(error.message.contains("the client was never started: call run()"))
        }
    }

    @Test func aStartedClientsDeadlineErrorDoesNot() async throws {
        // Port 1 refuses: the client runs, reconnecting, and the call times out in the queue.
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: 1)])
        configuration.backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(50))
        try await withLongLinkClient(configuration: configuration) { client in
            do {
                _ = try await client.request("echo", options: RequestOptions(timeout: .milliseconds(100)))
                Issue.record("expected the call to fail")
            } catch let error as LongLinkError {
                #expect(error.code == .deadlineExceeded)
                #expect(!error.message.contains("never started"))
            }
        }
    }
}

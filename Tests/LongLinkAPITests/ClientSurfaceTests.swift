// This file imports only LongLink: everything it uses is what a client app gets from
// `import LongLink` alone. `Scripts/check-import-surface.sh` checks the other side: that the event
// loop, connections, listeners and frames are not visible through it.
import LongLink
import Testing

@Suite("What import LongLink gives a client app")
struct ClientSurfaceTests {
    @Test func aConfigurationNeedsOnlyLongLinkTypes() throws {
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "quotes.example", port: 7000)])
        configuration.endpoints.append(try #require(Endpoint(parsing: "[::1]:7001")))
        configuration.connectionOptions.noDelay = true
        configuration.codec = JSONPayloadCodec()
        configuration.logger = { record in _ = record.level >= .warning }
        configuration.login = { session in
            _ = session.server.serverID
            _ = try await session.request("login", payload: Array("alice".utf8))
        }
        try configuration.validate()
        #expect(configuration.endpoints.map(\.description) == ["quotes.example:7000", "[::1]:7001"])
    }

    @Test func errorsAndStatusCodesAreUsable() {
        let error = LongLinkError(code: .init(status: .notFound), message: "no such room", isRemote: true)
        #expect(error.code == .notFound)
        #expect(error.code.status == StatusCode.notFound)
        #expect(error.description.contains("no such room"))
    }

    @Test func logRecordLevelsAreSwiftLogs() {
        #expect(
            LogRecord.Level.allCases.map(\.rawValue) == [
                "trace", "debug", "info", "notice", "warning", "error", "critical",
            ])
        #expect(
            LogRecord(level: .info, message: "m", metadata: ["b": "2", "a": "1"]).description == "[info] m a=1 b=2")
    }

    @Test func aManualServerInfoDescribesAServer() {
        let info = ServerInfo(serverID: "s1", heartbeat: .seconds(15), maxFrameBytes: 1 << 22)
        #expect(info.dedupeWindow == nil)
        #expect(info.protocolVersion == 1)
    }
}

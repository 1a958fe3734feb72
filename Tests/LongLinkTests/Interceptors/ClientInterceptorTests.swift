import LongLink
import LongLinkServer
import LongLinkTestSupport
import Testing

/// Adds a metadata entry and records the call and its outcome.
private struct Tagging: ClientInterceptor {
    let name: String
    let log: Watched<[String]>

    func intercept(_ call: ClientCall, next: @Sendable (ClientCall) async throws -> [UInt8]) async throws -> [UInt8] {
        var call = call
        call.options.metadata["seen-by", default: ""] += name
        log.update { $0.append("\(name)> \(call.method)") }
        do {
            let reply = try await next(call)
            log.update { $0.append("<\(name) ok") }
            return reply
        } catch let error as LongLinkError {
            log.update { $0.append("<\(name) \(error.code.status)") }
            throw error
        }
    }
}

/// Answers `cached` itself, without the wire.
private struct ShortCircuit: ClientInterceptor {
    func intercept(_ call: ClientCall, next: @Sendable (ClientCall) async throws -> [UInt8]) async throws -> [UInt8] {
        call.method == "cached" ? Array("from the interceptor".utf8) : try await next(call)
    }
}

@Suite("Client interceptors", .sharedMachine)
struct ClientInterceptorTests {
    @Test func theyRunInOrderAddMetadataAndSeeTheOutcome() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let log = Watched<[String]>([])
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.interceptors = [Tagging(name: "a", log: log), Tagging(name: "b", log: log), ShortCircuit()]
        try await withLongLinkClient(configuration: configuration) { client in
            // The probe's `metadata` method replies with the request's metadata as `key=value` lines.
            let reply = try await client.request("metadata")
            #expect(String(decoding: reply, as: UTF8.self).contains("seen-by=ab"))
            #expect(log.value == ["a> metadata", "b> metadata", "<b ok", "<a ok"])
            log.update { $0.removeAll() }
            await #expect(throws: LongLinkError.self) { try await client.request("fail", payload: bytes("no")) }
            #expect(log.value == ["a> fail", "b> fail", "<b NOT_FOUND", "<a NOT_FOUND"])
            #expect(String(decoding: try await client.request("cached"), as: UTF8.self) == "from the interceptor")
        }
        try await server.stop()
    }
}

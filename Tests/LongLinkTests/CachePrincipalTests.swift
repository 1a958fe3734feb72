import Foundation
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLink

/// Whose replies the response cache keeps, and who may read its files.
@Suite("Response cache: principals and files", .sharedMachine)
struct CachePrincipalTests {
    /// "caf\u{E9}" and "cafe\u{301}" are equal `String`s but two principals (their bytes differ):
    /// switching from one to the other clears the cache, in memory and on disk.
    @Test func namesThatDifferOnlyInNormalisationAreTwoPrincipals() {
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        #expect(composed == decomposed)  // what String equality would merge
        let directory = ResponseCacheTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = ResponseCacheConfiguration(directory: directory)
        let cache = ResponseCache(configuration: configuration, clock: SystemClock())
        cache.principal = composed
        cache.store("k", payload: [1], method: "m", principal: composed)
        #expect(cache.lookup("k", maxAge: nil) == [1])
        cache.principal = decomposed
        #expect(cache.count == 0)
        #expect(cache.lookup("k", maxAge: nil) == nil)
        // Nor from disk: a new instance of the other spelling finds nothing.
        let writer = ResponseCache(configuration: configuration, clock: SystemClock())
        writer.principal = composed
        writer.store("d", payload: [2], method: "m", principal: composed)
        let reader = ResponseCache(configuration: configuration, clock: SystemClock())
        reader.principal = decomposed
        #expect(reader.lookup("d", maxAge: nil) == nil)
        // A reply to a call made under the other spelling is not kept.
        reader.store("e", payload: [3], method: "m", principal: composed)
        #expect(reader.count == 0)
    }

    /// Under the usual umask (022) the folder would be 0755 and the files 0644: readable by every
    /// user of the machine. They are the owner's only, also in a folder that existed before.
    @Test func filesAreReadableByTheirOwnerOnly() throws {
        let directory = ResponseCacheTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let cache = ResponseCache(configuration: ResponseCacheConfiguration(directory: directory), clock: SystemClock())
        cache.principal = "alice"
        cache.store("k", payload: [1, 2, 3], method: "m", principal: "alice")
        func mode(_ path: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
        }
        #expect(try mode(directory) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains("principal") && names.contains { $0.hasSuffix(".entry") })
        for name in names {
            #expect(try mode(directory + "/" + name) == 0o600, "\(name)")
        }
    }

    /// A call made as one user whose reply arrives after another logged in: the reply is the first
    /// user's, and the cache (now the second's) does not keep it.
    @Test func aReplyIsKeptUnderThePrincipalCurrentWhenItsCallWasMade() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in
            _ = try await session.request("login", payload: bytes("wes"))
            session.loggedIn(as: "wes")
        }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(client.cache.principal == "wes")
        var options = RequestOptions()
        options.cache = .cacheFirst(maxAge: .seconds(60))
        let cached = options
        let call = Task { try await client.request("gated", payload: bytes("g"), options: cached) }
        while try await probe.events.next() != "started gated" {}
        client.cache.principal = "ann"
        probe.gate.put(())
        #expect(text(try await call.value) == "execution 1g")
        #expect(client.cache.count == 0)
        let key = ResponseCache.key(method: "gated", payload: bytes("g"), explicit: nil)
        #expect(client.cache.lookup(key, maxAge: nil) == nil)
        await running.stop()
        try await server.stop()
    }
}

import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

@Suite("Endpoint and SocketAddress", .sharedMachine)
struct EndpointTests {
    @Test(
        "parsing valid endpoints",
        arguments: [
            ("example.com:443", Endpoint.tcp(host: "example.com", port: 443)),
            ("127.0.0.1:0", .tcp(host: "127.0.0.1", port: 0)),
            ("[::1]:8080", .tcp(host: "::1", port: 8080)),
            ("[fe80::1%lo]:1", .tcp(host: "fe80::1%lo", port: 1)),
            ("unix:/tmp/a.sock", .unix(path: "/tmp/a.sock")),
        ])
    func parsesValid(text: String, expected: Endpoint) {
        #expect(Endpoint(parsing: text) == expected)
        #expect(Endpoint(parsing: expected.description) == expected)
    }

    @Test(
        "parsing rejects malformed endpoints",
        arguments: [
            "", "host", "host:", ":80", "host:65536", "host:-1", "host:+80", "::1:80", "[::1]80", "unix:", "[::1",
        ])
    func rejectsInvalid(text: String) {
        #expect(Endpoint(parsing: text) == nil)
    }

    @Test("socket addresses format and compare")
    func socketAddresses() throws {
        let v4 = try #require(SocketAddress(ipAddress: "127.0.0.1", port: 80))
        #expect(v4.host == "127.0.0.1")
        #expect(v4.port == 80)
        #expect(v4.description == "127.0.0.1:80")
        let v6 = try #require(SocketAddress(ipAddress: "::1", port: 443))
        #expect(v6.host == "::1")
        #expect(v6.description == "[::1]:443")
        #expect(v6.isIPv6)
        let unix = SocketAddress(unixPath: "/tmp/x.sock")
        #expect(unix.port == nil)
        #expect(unix.host == "/tmp/x.sock")
        #expect(unix.description == "unix:/tmp/x.sock")
        #expect(SocketAddress(ipAddress: "localhost", port: 80) == nil)
        #expect(SocketAddress(ipAddress: "127.0.0.1", port: 70000) == nil)
        #expect(v4 == SocketAddress(ipAddress: "127.0.0.1", port: 80))
        #expect(v4 != SocketAddress(ipAddress: "127.0.0.1", port: 81))
        // Round trip through the system representation.
        let back = v6.withSockAddr { SocketAddress($0, length: $1) }
        #expect(back == v6)
        let backUnix = unix.withSockAddr { SocketAddress($0, length: $1) }
        #expect(backUnix == unix)
    }

    @Test("the resolver returns literals directly and resolves localhost")
    func resolver() async throws {
        let literal = try await Resolver.resolve(host: "10.1.2.3", port: 7)
        #expect(literal == [SocketAddress(ipAddress: "10.1.2.3", port: 7)!])
        let local = try await within(.seconds(5), "resolving localhost") {
            try await Resolver.resolve(host: "localhost", port: 9)
        }
        #expect(!local.isEmpty)
        #expect(local.allSatisfy { $0.port == 9 && ($0.host == "127.0.0.1" || $0.host == "::1") })
        await #expect(throws: LongLinkError.self) {
            try await Resolver.resolve(host: "localhost", port: 65536)
        }
    }

    @Test("an unresolvable name is addressResolutionFailed")
    func unresolvable() async throws {
        let outcome = try await within(.seconds(30), "resolving an .invalid name") {
            () async -> LongLinkError? in
            do throws(LongLinkError) {
                _ = try await Resolver.resolve(host: "no-such-host.invalid", port: 80)
                return nil
            } catch {
                return error
            }
        }
        #expect(outcome?.code == .addressResolutionFailed)
    }
}

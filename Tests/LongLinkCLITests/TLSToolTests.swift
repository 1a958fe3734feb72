import Foundation
import LongLinkTestSupport
import Testing

/// `longlink serve --tls-*` with `request` and `subscribe --tls`, as processes, with certificates
/// the `openssl` command line makes.
@Suite(
    "longlink over TLS", .sharedMachine,
    .enabled(if: TestCertificates.opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSToolTests {
    static func startTLSServer(_ certificates: TestCertificates, _ extra: [String] = []) async throws
        -> (ToolProcess, Int)
    {
        try await ServeCommandTests.startServer(
            ["--quiet", "--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey] + extra)
    }

    @Test("request --tls verifies the server: a trusted CA works, the system store alone and a wrong pin fail")
    func request() async throws {
        let certificates = try await TestCertificates.make()
        let (server, port) = try await Self.startTLSServer(certificates)
        defer { server.terminate() }
        let endpoint = ["--endpoint", "localhost:\(port)"]
        let trusted = try await ToolProcess.run(
            ["request"] + endpoint + ["--tls", "--tls-ca", certificates.caCertificate, "echo", "--data", "hi"])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        #expect(trusted.standardOutput == "hi\n")

        let pinned = try await ToolProcess.run(
            ["request"] + endpoint + [
                "--tls", "--tls-ca", certificates.caCertificate, "--tls-pin", certificates.otherServerPin,
                "--tls-pin", certificates.serverPin, "echo", "--data", "pinned",
            ])
        #expect(pinned.status == 0, "\(pinned.standardError)")

        let untrusted = try await ToolProcess.run(
            ["request"] + endpoint + ["--tls", "--timeout", "1s", "echo", "--data", "hi"])
        #expect(untrusted.status == 1)
        #expect(untrusted.standardError.contains("tlsFailure"), "\(untrusted.standardError)")

        let wrongPin = try await ToolProcess.run(
            ["request"] + endpoint + [
                "--tls", "--tls-ca", certificates.caCertificate, "--tls-pin", certificates.otherServerPin, "--timeout",
                "1s", "echo",
            ])
        #expect(wrongPin.status == 1)
        #expect(wrongPin.standardError.contains("pinned"), "\(wrongPin.standardError)")

        let insecure = try await ToolProcess.run(
            ["request"] + endpoint + ["--tls", "--tls-insecure-for-testing", "echo", "--data", "anyway"])
        #expect(insecure.status == 0, "\(insecure.standardError)")
        #expect(insecure.standardOutput == "anyway\n")

        // A plain request to the TLS server does not get through.
        let plain = try await ToolProcess.run(["request"] + endpoint + ["--timeout", "1s", "echo"])
        #expect(plain.status == 1)
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test("probe --tls probes through the TLS handshake, and fails an untrusted server")
    func probe() async throws {
        let certificates = try await TestCertificates.make()
        let (server, port) = try await Self.startTLSServer(certificates)
        defer { server.terminate() }
        let trusted = try await ToolProcess.run([
            "probe", "localhost:\(port)", "--tls", "--tls-ca", certificates.caCertificate, "--json",
        ])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        #expect(trusted.standardOutput.contains(#""state":"reachable""#), "\(trusted.standardOutput)")
        let untrusted = try await ToolProcess.run(["probe", "localhost:\(port)", "--tls", "--timeout", "1s"])
        #expect(untrusted.status == 1)
        #expect(untrusted.standardOutput.contains("failed"), "\(untrusted.standardOutput)")
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test("subscribe --tls receives pushes")
    func subscribe() async throws {
        let certificates = try await TestCertificates.make()
        let (server, port) = try await Self.startTLSServer(certificates)
        defer { server.terminate() }
        let outcome = try await ToolProcess.run(
            SubscribeCommandTests.arguments(
                port: port,
                ["--tls", "--tls-ca", certificates.caCertificate, "--count", "2", "--topic", "quotes", "--quiet"]),
            within: .seconds(15))
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.lines.count == 2)
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }

    @Test("serve --tls-client-ca refuses clients without a certificate")
    func mutualTLS() async throws {
        let certificates = try await TestCertificates.make()
        let (server, port) = try await Self.startTLSServer(
            certificates, ["--tls-client-ca", certificates.caCertificate])
        defer { server.terminate() }
        let refused = try await ToolProcess.run(
            ["request", "--endpoint", "localhost:\(port)", "--tls", "--tls-ca", certificates.caCertificate]
                + ["--timeout", "1s", "echo"])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("tlsFailure"), "\(refused.standardError)")
        server.send(SIGTERM)
        #expect(try await server.waitForExit().status == 0)
    }
}

import Foundation
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

/// TLS against peers nobody here wrote: `openssl s_server` and `s_client`, and Python's `ssl`
/// module with the official protobuf runtime.
@Suite(
    "TLS interop with OpenSSL's tools and Python", .sharedMachine,
    .enabled(if: TestCertificates.opensslAvailable, "needs openssl"))
struct TLSInteropTests {
    static let openssl = "/usr/bin/openssl"

    /// `openssl s_server -rev` (answers each line reversed) on a free port, once it accepts.
    ///
    /// s_server binds the port it is given on its command line: another test can take a port
    /// between `freePort()` and that bind, so a start that finds it in use tries another.
    private func startSServer(certificate: String, key: String) async throws -> (ToolProcess, Int) {
        let attempts = 5
        for attempt in 1...attempts {
            let port = try await freePort()
            let server = try ToolProcess(
                [
                    "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-rev", "-alpn",
                    "longlink/1",
                ], tool: Self.openssl)
            do {
                try await server.waitForOutput(containing: Array("ACCEPT".utf8))
                return (server, port)
            } catch where attempt < attempts && server.standardError.contains("in use") {
                server.terminate()
            } catch {
                server.terminate()
                throw error
            }
        }
        preconditionFailure("the last attempt returns or throws")
    }

    /// Reads through a ``Connection`` until `count` bytes arrived.
    private final class Collector: ConnectionHandler, Sendable {
        let bytes = Mailbox<[UInt8]>()
        func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
            self.bytes.put(Array(bytes))
        }
        func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {}
    }

    @Test("the LongLink client against openssl s_server: verified handshake, ALPN, bytes both ways")
    func clientAgainstSServer() async throws {
        let certificates = try await TestCertificates.make()
        let (server, port) = try await startSServer(
            certificate: certificates.serverCertificate, key: certificates.serverKey)
        defer { server.terminate() }
        var configuration = TLSConfiguration()
        configuration.trustRoots = .pemFile(certificates.caCertificate)
        let context = try TLSContext(client: configuration)
        let loop = EventLoop(name: "s_server-client")
        let connection = try await Connection.connect(
            to: .tcp(host: "localhost", port: port), tls: context, on: loop)
        let collector = Collector()
        let alpn = await withCheckedContinuation { continuation in
            loop.execute {
                connection.start(handler: collector)
                continuation.resume(returning: connection.tlsApplicationProtocol)
            }
        }
        #expect(alpn == "longlink/1")
        try await connection.send(Array("hello from longlink\n".utf8))
        var received: [UInt8] = []
        while !received.contains(UInt8(ascii: "\n")) {
            received += try await collector.bytes.next(within: .seconds(10), "s_server's answer")
        }
        #expect(String(decoding: received, as: UTF8.self) == "knilgnol morf olleh\n")
        connection.close()
        await loop.shutdownAndWait()
    }

    @Test("the LongLink client refuses an openssl s_server whose certificate it does not trust")
    func clientRefusesUntrustedSServer() async throws {
        let certificates = try await TestCertificates.make()
        let (server, port) = try await startSServer(
            certificate: certificates.otherServerCertificate, key: certificates.otherServerKey)
        defer { server.terminate() }
        var configuration = TLSConfiguration()
        configuration.trustRoots = .pemFile(certificates.caCertificate)
        let context = try TLSContext(client: configuration)
        let loop = EventLoop(name: "s_server-untrusted")
        do {
            let connection = try await Connection.connect(
                to: .tcp(host: "localhost", port: port), tls: context, on: loop)
            connection.close()
            Issue.record("connected to an untrusted server")
        } catch {
            #expect((error.underlying as? TLSFailure)?.reason == .untrustedCertificate)
        }
        await loop.shutdownAndWait()
    }

    @Test("openssl s_client against longlink serve --tls-*: verified handshake, ALPN, Hello then Welcome")
    func sClientAgainstServe() async throws {
        let certificates = try await TestCertificates.make()
        let (serve, port) = try await TLSToolTests.startTLSServer(certificates, ["--server-id", "s-client-interop"])
        defer { serve.terminate() }
        var hello: [UInt8] = []
        Frame.hello(Frame.Hello(clientID: "s_client")).encodeDelimited(into: &hello)
        let client = try ToolProcess(
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-verify_hostname",
                "localhost", "-CAfile", certificates.caCertificate, "-verify_return_error", "-alpn", "longlink/1",
                "-ign_eof",
            ], input: hello, tool: Self.openssl)
        defer { client.terminate() }
        // The Welcome frame carries the server id; s_client prints what it receives.
        try await client.waitForOutput(containing: Array("s-client-interop".utf8))
        let output = client.standardOutput
        #expect(output.contains("Verify return code: 0 (ok)"), "\(output)")
        #expect(output.contains("ALPN protocol: longlink/1"))
        #expect(output.contains("TLSv1.3"))
        serve.send(SIGTERM)
        #expect(try await serve.waitForExit().status == 0)
    }

    @Test(
        "Python's ssl module with the official protobuf runtime: a request against longlink serve --tls-*",
        .enabled(if: pythonProtobufAvailable(), "needs python3 with protobuf and grpcio-tools"))
    func pythonRequest() async throws {
        let certificates = try await TestCertificates.make()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let generated = certificates.path("python-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(atPath: generated, withIntermediateDirectories: true)
        let protoc = try await ToolProcess.run(
            [
                "python3", "-m", "grpc_tools.protoc", "-I", root.appendingPathComponent("proto").path,
                "--python_out=\(generated)", root.appendingPathComponent("proto/longlink/v1/longlink.proto").path,
            ], tool: "/usr/bin/env", within: .seconds(60))
        try #require(protoc.status == 0, "\(protoc.standardError)")
        let (serve, port) = try await TLSToolTests.startTLSServer(certificates)
        defer { serve.terminate() }
        let script = root.appendingPathComponent("Tests/Interop/tls_request.py").path
        let outcome = try await ToolProcess.run(
            [
                "python3", script, generated, "127.0.0.1", "\(port)", certificates.caCertificate, "localhost",
                "from python",
            ], tool: "/usr/bin/env", within: .seconds(30))
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.lines == ["TLSv1.3", "longlink/1", "from python"])
        serve.send(SIGTERM)
        #expect(try await serve.waitForExit().status == 0)
    }
}

/// Whether `python3` has the protobuf runtime and grpcio-tools (CI installs them).
func pythonProtobufAvailable() -> Bool {
    (try? TestCertificates.run(["python3", "-c", "import google.protobuf, grpc_tools.protoc"], in: "/tmp")) != nil
}

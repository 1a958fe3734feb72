import LongLinkCore
import Foundation
import LongLinkCLISupport
import LongLinkTransport

/// Certificates made at test time with the `openssl` command line, once per test process, in a
/// temporary directory: a test CA and a server certificate it issued for `localhost` and
/// `127.0.0.1`, the same name expired and not yet valid, a second CA nobody trusts with a server
/// certificate of its own, client certificates from each CA (for mutual TLS), and a man in the
/// middle's chains that append the real server certificate to a leaf of their own.
package struct TestCertificates: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The directory holding every file.
    package let directory: String

    package var caCertificate: String { path("ca.pem") }
    package var serverCertificate: String { path("server.pem") }
    package var serverKey: String { path("server.key") }
    /// `server.key`'s certificate, expired a day ago.
    package var expiredCertificate: String { path("expired.pem") }
    /// `server.key`'s certificate, valid only from 2099.
    package var notYetValidCertificate: String { path("notyet.pem") }
    package var otherCACertificate: String { path("other-ca.pem") }
    /// A certificate for `localhost` issued by the other CA, with `other-server.key`.
    package var otherServerCertificate: String { path("other-server.pem") }
    package var otherServerKey: String { path("other-server.key") }
    package var clientCertificate: String { path("client.pem") }
    package var clientKey: String { path("client.key") }
    /// A client certificate issued by the other CA.
    package var otherClientCertificate: String { path("other-client.pem") }
    package var otherClientKey: String { path("other-client.key") }
    /// A man in the middle's chain: a `localhost` certificate the test CA issued for `attacker.key`,
    /// followed by the real `server.pem` it appended.
    package var attackerChain: String { path("attacker-chain.pem") }
    package var attackerKey: String { path("attacker.key") }
    /// A self-signed `localhost` certificate for `attacker.key`, followed by the real `server.pem`.
    package var selfSignedAttackerChain: String { path("selfsigned-chain.pem") }
    /// Base64 of the SHA-256 of `server.key`'s SubjectPublicKeyInfo, as `openssl` computes it.
    package let serverPin: String
    /// The same for `other-server.key`.
    package let otherServerPin: String
    /// The same for the test CA's key (the root of `server.pem`'s verified chain).
    package let caPin: String
    /// The same for `client.key` (subject `CN=test client`).
    package let clientPin: String

    package func path(_ name: String) -> String {
        directory + "/" + name
    }

    // Made once, on a thread of its own: the `openssl` runs block, and a test blocked in them (or
    // waiting for the first caller under a lock) holds one of the few threads that run every task
    // of the process, stalling other tests' actors and timers for seconds under the whole suite.
    // `Locked`, not `Mutex`: ThreadSanitizer cannot see `Mutex`'s hand-over (see `Locked`).
    private static let shared = Locked<Task<TestCertificates, any Error>?>(nil)

    /// The certificates, made on first use.
    package static func make() async throws -> TestCertificates {
        let task = shared.withLock { task in
            if let task { return task }
            let made = Task { try await onOwnThread { () throws(Failure) in try generate() } }
            task = made
            return made
        }
        return try await task.value
    }

    /// Runs blocking `work` on a thread of its own, not on the threads that run tasks.
    private static func onOwnThread<T: Sendable>(
        _ work: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
            Thread.detachNewThread { continuation.resume(returning: Result { () throws(Failure) in try work() }) }
        }
        return try result.get()
    }

    /// True when the `openssl` command line is there and this build has TLS (tests that need it are
    /// skipped otherwise: a build with `LONGLINK_NO_OPENSSL`, as Darwin's, reports TLS `unavailable`).
    package static var opensslAvailable: Bool {
        TLSContext.isAvailable && (try? run(["openssl", "version"], in: "/tmp")) != nil
    }

    private static func generate() throws(Failure) -> TestCertificates {
        let directory = NSTemporaryDirectory() + "longlink-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create \(directory): \(error)")
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        func authority(_ name: String, _ subject: String) throws(Failure) {
            try run(
                ["openssl", "req", "-x509"] + ec
                    + ["-keyout", "\(name).key", "-out", "\(name).pem", "-days", "30", "-subj", "/CN=\(subject)"],
                in: directory)
        }
        func request(_ name: String, _ subject: String) throws(Failure) {
            try run(
                ["openssl", "req"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(subject)"],
                in: directory)
        }
        func sign(_ name: String, by ca: String, as output: String, days: String, extensions: String) throws(Failure) {
            try run(
                [
                    "openssl", "x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key",
                    "-CAcreateserial", "-out", "\(output).pem", "-days", days, "-extfile", extensions,
                ], in: directory)
        }
        try write("subjectAltName=DNS:localhost,IP:127.0.0.1\n", to: directory + "/server.ext")
        try write("extendedKeyUsage=clientAuth\n", to: directory + "/client.ext")
        try write(
            """
            [ca]
            default_ca = test
            [test]
            database = index.txt
            new_certs_dir = .
            serial = serial.txt
            default_md = sha256
            policy = any
            copy_extensions = copy
            [any]
            commonName = supplied

            """, to: directory + "/ca.cnf")
        try write("", to: directory + "/index.txt")
        try write("1000\n", to: directory + "/serial.txt")

        try authority("ca", "LongLink Test CA")
        try authority("other-ca", "Untrusted Test CA")
        try request("server", "localhost")
        try sign("server", by: "ca", as: "server", days: "30", extensions: "server.ext")
        // Valid until a day before now.
        try sign("server", by: "ca", as: "expired", days: "-1", extensions: "server.ext")
        try run(
            [
                "openssl", "ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-in",
                "server.csr", "-out", "notyet.pem", "-startdate", "20990101000000Z", "-enddate", "20990102000000Z",
                "-extfile", "server.ext", "-notext",
            ], in: directory)
        try request("other-server", "localhost")
        try sign("other-server", by: "other-ca", as: "other-server", days: "30", extensions: "server.ext")
        try request("client", "test client")
        try sign("client", by: "ca", as: "client", days: "30", extensions: "client.ext")
        try request("other-client", "rogue client")
        try sign("other-client", by: "other-ca", as: "other-client", days: "30", extensions: "client.ext")
        try request("attacker", "localhost")
        try sign("attacker", by: "ca", as: "attacker", days: "30", extensions: "server.ext")
        try run(
            ["openssl", "req", "-x509", "-key", "attacker.key", "-out", "selfsigned.pem", "-days", "30", "-subj",
             "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
            in: directory)
        try run(["/bin/sh", "-c", "cat attacker.pem server.pem > attacker-chain.pem"], in: directory)
        try run(["/bin/sh", "-c", "cat selfsigned.pem server.pem > selfsigned-chain.pem"], in: directory)
        return TestCertificates(
            directory: directory, serverPin: try pin(of: "server.key", in: directory),
            otherServerPin: try pin(of: "other-server.key", in: directory), caPin: try pin(of: "ca.key", in: directory),
            clientPin: try pin(of: "client.key", in: directory))
    }

    /// What `openssl` says the pin of a key is (SHA-256 of the DER SubjectPublicKeyInfo, base64).
    private static func pin(of key: String, in directory: String) throws(Failure) -> String {
        let output = try run(
            ["/bin/sh", "-c", "openssl pkey -in \(key) -pubout -outform der | openssl dgst -sha256 -binary | base64"],
            in: directory)
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func write(_ text: String, to path: String) throws(Failure) {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw Failure(description: "cannot write \(path)")
        }
    }

    /// Runs a command to completion (at most 30 s) and returns its output.
    @discardableResult
    package static func run(_ arguments: [String], in directory: String) throws(Failure) -> String {
        let process: ChildProcess
        do {
            process = try ChildProcess(
                arguments[0], arguments: Array(arguments.dropFirst()), workingDirectory: directory,
                standardInput: .nullDevice, standardOutput: .pipe, standardError: .pipe)
        } catch {
            throw Failure(description: "cannot run \(arguments[0]): \(error)")
        }
        // The outputs are small; reading them to the end also waits for the process to close them.
        let text = process.standardOutput!.readDataToEndOfFile()
        let errorText = process.standardError!.readDataToEndOfFile()
        guard let status = process.waitUntilExit(within: .seconds(30), pollingEvery: .milliseconds(1)) else {
            process.terminate()
            throw Failure(description: "\(arguments.joined(separator: " ")) did not finish within 30 s")
        }
        guard status == 0 else {
            throw Failure(
                description:
                    "\(arguments.joined(separator: " ")) failed (\(status)): "
                    + String(decoding: errorText, as: UTF8.self))
        }
        return String(decoding: text, as: UTF8.self)
    }
}

import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

/// Pins are checked over the verified chain (the leaf only without verification), so a man in the
/// middle who appends the real server's certificate to a leaf of his own is refused.
@Suite(
    "TLS pinning over the verified chain", .sharedMachine,
    .enabled(if: opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSPinningTests {
    /// Connects to a real TLS listener presenting `chain` (with `key`) and returns the client's error, nil
    /// when it connected.
    private func connect(chain: String, key: String, client: TLSContext) async throws -> LongLinkError? {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-pinning")
        let loop = EventLoop(name: "tls-pinning-client")
        let server = try await TLSEchoServer(
            try serverContext(certificates, certificate: chain, key: key), group: group)
        let error = try await failedConnect(port: server.port, host: "localhost", tls: client, on: loop)
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
        return error
    }

    private func pins(_ texts: String...) throws -> [TLSPublicKeyPin] {
        try texts.map { try #require(TLSPublicKeyPin(base64: $0)) }
    }

    @Test("a trusted CA's leaf with the real certificate appended is a pinMismatch naming pins and keys")
    func appendedToTrustedLeaf() async throws {
        let certificates = try await TestCertificates.make()
        let pinned = try pins(certificates.serverPin)
        let client = try clientContext(certificates) { $0.pinnedPublicKeys = pinned }
        let error = try await connect(chain: certificates.attackerChain, key: certificates.attackerKey, client: client)
        #expect(tlsReason(error) == .pinMismatch)
        let detail = (error?.underlying as? TLSFailure)?.detail ?? ""
        #expect(detail.contains(certificates.serverPin))
        #expect(detail.contains(certificates.caPin), "the verified chain's root is among the keys seen")
    }

    @Test("without verification, a self-signed leaf with the real certificate appended is a pinMismatch")
    func appendedToSelfSignedLeaf() async throws {
        let certificates = try await TestCertificates.make()
        let pinned = try pins(certificates.serverPin)
        let client = try clientContext(certificates) {
            $0.certificateVerification = .insecureNoVerificationForTesting
            $0.pinnedPublicKeys = pinned
        }
        let error = try await connect(
            chain: certificates.selfSignedAttackerChain, key: certificates.attackerKey, client: client)
        #expect(tlsReason(error) == .pinMismatch)
    }

    @Test("the honest chain passes, with one pin, two pins (rotation), or the CA's pin, verified or not")
    func honestChain() async throws {
        let certificates = try await TestCertificates.make()
        let choices = [
            try pins(certificates.serverPin), try pins(certificates.otherServerPin, certificates.serverPin),
            try pins(certificates.caPin),
        ]
        for (index, pinned) in choices.enumerated() {
            let verified = try clientContext(certificates) { $0.pinnedPublicKeys = pinned }
            let error = try await connect(
                chain: certificates.serverCertificate, key: certificates.serverKey, client: verified)
            #expect(error == nil, "pins \(index), verified: \(String(describing: error))")
        }
        let unverified = try clientContext(certificates) {
            $0.certificateVerification = .insecureNoVerificationForTesting
            $0.pinnedPublicKeys = choices[1]
        }
        let error = try await connect(
            chain: certificates.serverCertificate, key: certificates.serverKey, client: unverified)
        #expect(error == nil, "unverified rotation: \(String(describing: error))")
    }
}

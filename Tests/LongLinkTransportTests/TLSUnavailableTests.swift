import LongLinkCore
import LongLinkTestSupport
import Testing

@testable import LongLinkTransport

/// A build without OpenSSL (Darwin's, or Linux's with `LONGLINK_NO_OPENSSL`) says TLS is unavailable
/// with its own reason, for clients and servers alike, rather than failing some other way.
@Suite("Without OpenSSL, TLS is unavailable", .enabled(if: !TLSContext.isAvailable, "this build has OpenSSL"))
struct TLSUnavailableTests {
    private func reason(_ make: () throws(LongLinkError) -> Void) -> TLSFailure.Reason? {
        do {
            try make()
            return nil
        } catch {
            guard error.code == .tlsFailure else { return nil }
            return (error.underlying as? TLSFailure)?.reason
        }
    }

    @Test("client and server contexts, and a made certificate, throw tlsFailure(.unavailable)")
    func contextsAreUnavailable() {
        #expect(reason { () throws(LongLinkError) in _ = try TLSContext(client: TLSConfiguration()) } == .unavailable)
        let server = ServerTLSConfiguration(certificateChain: .bytes([]), privateKey: .bytes([]))
        #expect(reason { () throws(LongLinkError) in _ = try TLSContext(server: server) } == .unavailable)
        #expect(reason { () throws(LongLinkError) in _ = try SelfSignedCertificate() } == .unavailable)
    }
}

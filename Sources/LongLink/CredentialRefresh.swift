/// Credentials with a lifetime (``ClientConfiguration/credentials``): the app's provider of fresh
/// credentials, and when and how the client renews them on the live link.
///
/// The login step asks for the credential with ``LoginSession/credential()``, which calls the
/// provider (every login does: a reconnect never reuses an earlier, perhaps expired, credential).
/// Once the login succeeded, the client asks the provider again ``lead`` before the credential
/// expires (up to ``jitter`` of it later) and sends the new token to ``method`` on the same link,
/// as an ordinary request whose payload is the token's UTF-8 bytes; the server renews the session
/// in place (LongLinkServer: `Router.registerCredentialRefresh(_:handler:)`). A refresh that fails
/// (the provider throws or takes longer than ``timeout``, the server refuses, the request times
/// out) is tried again after ``backoff``, until the expiry; the link stays meanwhile. At the
/// expiry the client ends the link itself (the state says "credential expired", with an
/// ``LongLinkError/Code-swift.struct/unauthenticated`` error), reconnects and logs in with a new
/// credential; unanswered requests are resent as after any reconnect. The server's
/// `GoAway{UNAUTHENTICATED, "credential expired", reconnect: true}` is handled the same way. A
/// provider that hands out a credential already expired ends the session for good with
/// ``LongLinkError/Code-swift.struct/unauthenticated`` ("credential expired"), which ``LongLinkClient/run()``
/// throws and push streams end with, instead of reconnecting forever.
public struct CredentialRefresh: Sendable {
    /// The method of the refresh request (the name the server registered).
    public var method: String
    /// Hands out a fresh credential (called by every login and every refresh).
    public var provider: @Sendable () async throws -> Credential
    /// How long before the expiry a refresh starts.
    public var lead: Duration = .seconds(60)
    /// The fraction of ``lead`` (0 ... 1) by which a refresh may start later, at random, so that
    /// clients that logged in together do not refresh together.
    public var jitter: Double = 0.2
    /// How long the provider and the refresh request may each take before the attempt counts as
    /// failed (a hung provider is abandoned, and cancelled).
    public var timeout: Duration = .seconds(10)
    /// The delays between failed refreshes (never past the expiry).
    public var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30))

    /// Refreshes through `method`, with credentials from `provider`.
    public init(method: String, provider: @escaping @Sendable () async throws -> Credential) {
        self.method = method
        self.provider = provider
    }
}

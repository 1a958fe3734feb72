/// A credential the app's provider hands the client (``CredentialRefresh/provider``): a token and
/// when it expires.
///
/// The expiry is an instant of the client's ``ClientConfiguration/clock`` (by default
/// `ContinuousClock`): convert a token's wall-clock expiry with its time left, as in
/// `ContinuousClock.now.advanced(by: .seconds(jwt.exp - Date().timeIntervalSince1970))`.
public struct Credential: Sendable, Hashable {
    /// What the login step and the refresh request send (a JWT, an opaque token).
    public var token: String
    /// When the server stops accepting it; nil for a credential that does not expire (then the
    /// client never refreshes it).
    public var expiresAt: ContinuousClock.Instant?

    /// A credential with `token`, expiring at `expiresAt` (nil: never).
    public init(token: String, expiresAt: ContinuousClock.Instant?) {
        self.token = token
        self.expiresAt = expiresAt
    }
}

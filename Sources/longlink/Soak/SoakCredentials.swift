import LongLinkCore
import LongLink
import LongLinkServer
import LongLinkTransport

/// The soak's credentials with a lifetime: the app's provider (tokens that live ``lifetime``),
/// the server's side of them (a login and a refresh set that lifetime), the expiry fault (the
/// provider refuses until the credential in force has expired, so that the session ends on it),
/// and the account the report gives: logins, refreshes, and logins that presented an expired
/// credential (there must be none).
final class SoakCredentials: Sendable {
    /// The refresh request's method.
    static let refreshMethod = "auth.refresh"

    /// How long each credential lives.
    let lifetime: Duration
    private let state = Locked(State())

    private struct State {
        var issued = 0
        /// Each token's expiry, while it may still be presented (pruned as they expire).
        var expiries: [String: ContinuousClock.Instant] = [:]
        /// The expiry of the credential handed out last: the one in force.
        var lastExpiry: ContinuousClock.Instant?
        /// The expiry fault: no credential until then.
        var refusingUntil: ContinuousClock.Instant?
        var logins = 0
        var refreshes = 0
        var staleLogins = 0
    }

    /// Tokens that live `lifetime`.
    init(lifetime: Duration) {
        self.lifetime = lifetime
    }

    /// The provider: a new token, or a refusal during the expiry fault.
    func credential() throws -> Credential {
        let now = ContinuousClock.now
        return try state.withLock { state in
            if let until = state.refusingUntil, now < until {
                throw LongLinkError(code: .unavailable, message: "soak: the token service refuses until the expiry")
            }
            state.issued += 1
            let token = "soak-token-\(state.issued)"
            let expiry = now.advanced(by: lifetime)
            state.expiries = state.expiries.filter { $0.value > now }
            state.expiries[token] = expiry
            state.lastExpiry = expiry
            return Credential(token: token, expiresAt: expiry)
        }
    }

    /// The expiry fault: every new credential is refused until the one in force expires. Returns
    /// how long that is.
    func refuseUntilExpiry() -> Duration {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.refusingUntil = state.lastExpiry
            return state.lastExpiry.map { max(.zero, $0 - now) } ?? .zero
        }
    }

    /// The server saw a login (`token` nil: a login without one, from a server that takes none).
    func loggedIn(with token: String?) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.logins += 1
            guard let token else { return }
            // A token no longer listed was pruned after its expiry: stale too.
            if (state.expiries[token].map { $0 <= now }) ?? true { state.staleLogins += 1 }
        }
    }

    /// The server's refresh handler: the token's lifetime, or `UNAUTHENTICATED` for one that is
    /// unknown or expired.
    func refreshed(with token: String) throws -> Duration {
        let now = ContinuousClock.now
        return try state.withLock { state in
            guard let expiry = state.expiries[token], expiry > now else {
                throw LongLinkError(code: .unauthenticated, message: "soak: unknown or expired token")
            }
            state.refreshes += 1
            return lifetime
        }
    }

    /// Logins, refreshes the server accepted, and logins that presented an expired credential.
    var account: (logins: Int, refreshes: Int, staleLogins: Int) {
        state.withLock { ($0.logins, $0.refreshes, $0.staleLogins) }
    }

    /// Registers the login (`principal` or `principal token` as its payload) and the refresh.
    func register(in router: inout Router, onLogin: @escaping @Sendable () -> Void) {
        router.register("login") { [self] payload, context in
            let words = String(decoding: payload, as: UTF8.self).split(separator: " ", maxSplits: 1).map(String.init)
            context.bind(principal: words.first ?? "")
            loggedIn(with: words.count > 1 ? words[1] : nil)
            context.setCredentialLifetime(lifetime)
            onLogin()
            return []
        }
        router.registerCredentialRefresh(Self.refreshMethod) { [self] payload, _ in
            try refreshed(with: String(decoding: payload, as: UTF8.self))
        }
    }
}

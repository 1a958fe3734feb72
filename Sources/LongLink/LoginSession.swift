internal import LongLinkWire

/// What the login step gets: a way to make requests on the new link before queued requests are
/// released ("login gates the queue").
///
/// Requests made here go out on this link only; if it drops during login they fail with
/// ``LongLinkError/Code-swift.struct/connectionLost`` and the whole login runs again on the next link.
public struct LoginSession: Sendable {
    let core: ClientCore
    let generation: UInt64
    let configuration: ClientConfiguration
    let makeRequestID: @Sendable () -> UInt64

    /// What the server said about itself when this link opened (its `Welcome`).
    public let server: ServerInfo

    /// Tells the client who logged in: the ``ResponseCache`` belongs to that principal, and is
    /// cleared when it differs from the previous one.
    public func loggedIn(as principal: String) {
        core.responseCache.principal = principal
    }

    /// A fresh credential from ``ClientConfiguration/credentials``'s provider, for this login to
    /// send: every login asks (a reconnect never reuses an earlier, perhaps expired, one). Once the
    /// login succeeds the client refreshes it on this link before it expires (see
    /// ``CredentialRefresh``).
    ///
    /// Throws ``LongLinkError/Code-swift.struct/unauthenticated`` when the provider hands out a
    /// credential that expired already (the login then ends the session for good rather than
    /// present it), ``LongLinkError/Code-swift.struct/deadlineExceeded`` when the provider takes
    /// longer than ``CredentialRefresh/timeout`` (the client reconnects and asks again), what the
    /// provider throws, and ``LongLinkError/Code-swift.struct/failedPrecondition`` without
    /// ``ClientConfiguration/credentials``.
    public func credential() async throws -> Credential {
        guard configuration.credentials != nil else {
            throw LongLinkError(code: .failedPrecondition, message: "no credentials in the configuration")
        }
        return try await core.credentialForLogin(generation: generation)
    }

    /// Tells the client when the session's credential expires, when the login's reply says so
    /// (overriding the expiry of ``credential()``); nil: it does not expire. Without
    /// ``ClientConfiguration/credentials`` there is nothing to refresh and this does nothing.
    public func credentialExpires(at expiresAt: ContinuousClock.Instant?) async {
        guard configuration.credentials != nil else { return }
        await core.credentialExpires(generation: generation, at: expiresAt)
    }

    /// Sends `payload` to `method` on this link and returns the reply's payload.
    public func request(_ method: String, payload: [UInt8] = [], timeout: Duration? = nil) async throws -> [UInt8] {
        let request = PendingRequest(
            id: makeRequestID(), method: method, payload: payload,
            deadline: configuration.clock.now.advanced(by: timeout ?? configuration.defaultTimeout), idempotent: false,
            bypassesGate: true, linkGeneration: generation)
        return try await core.perform(request)
    }

    /// Sends a typed request on this link and decodes its reply.
    public func send<Request: LongLinkRequest>(_ request: Request, timeout: Duration? = nil) async throws
        -> Request.Reply
    {
        let codec = configuration.codec
        let reply = try await self.request(
            Request.method, payload: try request.encodePayload(with: codec), timeout: timeout)
        return try Request.decodedReply(reply, codec: codec)
    }
}

internal import LongLinkTransport
internal import LongLinkWire

/// What a handler knows about the request it serves, and what it may do to the connection.
public struct RequestContext: Sendable {
    /// The request's id, unique per client.
    public let requestID: String
    /// The method name.
    public let method: String
    /// The request's metadata.
    public let metadata: [String: String]
    /// The `client_id` from the connection's `Hello`.
    public let clientID: String
    /// The principal the connection was bound to when the request arrived, if any.
    public let principal: String?
    /// When the client stops waiting, from the request's `timeout_ms`; `nil` when none was sent.
    public let deadline: ContinuousClock.Instant?
    /// The transport connection's id (for logs, and for state kept per connection: see
    /// ``ServerConfiguration/connectionClosed``).
    public let connectionID: UInt64

    let session: ServerConnection
    /// The request's execution in the de-duplication window, when it has one: a binding is
    /// recorded there, for the copies that are answered from it.
    let run: DedupeRun?

    /// The subject of the certificate the client presented in a mutual-TLS handshake, in RFC 2253
    /// form (`CN=alice,O=Example`); nil when it presented none (plain TCP, or TLS without
    /// ``ClientCertificateVerification/required(_:)``). With verification required, the chain led
    /// to one of the trusted roots.
    public var peerCertificateSubject: String? { session.peerCertificate?.subject }

    /// The SHA-256 of the client certificate's SubjectPublicKeyInfo in base64, as pins are written
    /// (`openssl pkey -pubout -outform der | openssl dgst -sha256 -binary | base64`); nil when the
    /// client presented no certificate.
    public var peerCertificatePin: String? { session.peerCertificate?.pin }

    /// False once the connection has closed (a handler may outlive its connection). Set before
    /// ``ServerConfiguration/connectionClosed`` is called: a handler that records state for the
    /// connection, then finds it closed, forgets that state itself, as the callback may have run
    /// before the state was recorded.
    public var isConnectionOpen: Bool { !session.isClosed }

    /// Binds the connection to `principal` (a user id), as a login handler does. Reliable pushes to
    /// that principal flow on this connection after the client's next `Sync`; a previous binding is
    /// replaced.
    public func bind(principal: String) {
        bind(principal: principal, exclusive: false)
    }

    /// Binds the connection to `principal`, as ``bind(principal:)`` does; with `exclusive: true`
    /// the principal may be logged in from one client at a time: its sessions from other clients
    /// (other `client_id`s) end with `GoAway(UNAUTHENTICATED, "logged in elsewhere", reconnect:
    /// false)`, on this server and, in a fleet (``ServerStores``), on every other. A LongLink
    /// client so kicked stops with a terminal error. The same client's other links (a
    /// reconnection, a migration under way) are kept. In a fleet this holds when the notice to
    /// the other servers is lost: the login is recorded in the shared store for a while, and
    /// servers check the record every second (see ``PushStore/sessionRecords(of:)``).
    public func bind(principal: String, exclusive: Bool) {
        if let run { session.executionBound(run, principal: principal, exclusive: exclusive) }
        session.bind(principal: principal, exclusive: exclusive)
    }
}

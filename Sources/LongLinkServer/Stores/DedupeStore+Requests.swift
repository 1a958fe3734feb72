/// A request for ``DedupeStore/begin(_:)`` to claim.
public struct DedupeClaimRequest: Sendable, Hashable {
    /// The principal of the connection it came on (nil: none; the server de-duplicates only
    /// requests of a logged-in connection).
    public var principal: String?
    /// The client's `client_id`.
    public var clientID: String
    /// The request's id, unique per client.
    public var requestID: String
    /// How long the claim lasts: a server that stops while running the request leaves it claimed
    /// until then.
    public var runningFor: Duration
    /// The client marked it a copy of a request written on an earlier connection
    /// (`Request.resent`).
    public var resent: Bool
    /// How long the server keeps a reply (its ``ServerConfiguration/dedupeWindow``), by which a
    /// store that may lose entries judges a resent copy; nil when the caller keeps no window (a
    /// store then makes no such judgement).
    public var window: Duration?

    /// A claim of `requestID` of `clientID` (as `principal`) for `runningFor`.
    public init(
        principal: String?, clientID: String, requestID: String, runningFor: Duration, resent: Bool = false,
        window: Duration? = nil
    ) {
        self.principal = principal
        self.clientID = clientID
        self.requestID = requestID
        self.runningFor = runningFor
        self.resent = resent
        self.window = window
    }
}

/// A wait for ``DedupeStore/awaitOutcome(_:)``: the outcome of a request another server runs.
public struct DedupeWaitRequest: Sendable, Hashable {
    /// The principal of the connection it came on (nil: none).
    public var principal: String?
    /// The client's `client_id`.
    public var clientID: String
    /// The request's id, unique per client.
    public var requestID: String
    /// How long a claim lasts should the request be given up and this waiter claim it.
    public var runningFor: Duration
    /// When to stop waiting (the request's deadline).
    public var deadline: ContinuousClock.Instant

    /// A wait for `requestID` of `clientID` (as `principal`) until `deadline`, claiming it for
    /// `runningFor` should it be given up.
    public init(
        principal: String?, clientID: String, requestID: String, runningFor: Duration,
        until deadline: ContinuousClock.Instant
    ) {
        self.principal = principal
        self.clientID = clientID
        self.requestID = requestID
        self.runningFor = runningFor
        self.deadline = deadline
    }
}

/// The reply of a request this instance ran, for ``DedupeStore/finish(_:)`` to keep.
public struct DedupeFinishRequest: Sendable, Hashable {
    /// The principal of the connection it came on (nil: none).
    public var principal: String?
    /// The client's `client_id`.
    public var clientID: String
    /// The request's id, unique per client.
    public var requestID: String
    /// The reply, opaque to the store.
    public var reply: [UInt8]
    /// How long to keep it.
    public var window: Duration

    /// The reply of `requestID` of `clientID` (as `principal`), kept for `window`.
    public init(principal: String?, clientID: String, requestID: String, reply: [UInt8], window: Duration) {
        self.principal = principal
        self.clientID = clientID
        self.requestID = requestID
        self.reply = reply
        self.window = window
    }
}

/// A request this instance claimed and did not finish, for ``DedupeStore/abandon(_:)`` to forget.
public struct DedupeAbandonRequest: Sendable, Hashable {
    /// The principal of the connection it came on (nil: none).
    public var principal: String?
    /// The client's `client_id`.
    public var clientID: String
    /// The request's id, unique per client.
    public var requestID: String

    /// `requestID` of `clientID` (as `principal`).
    public init(principal: String?, clientID: String, requestID: String) {
        self.principal = principal
        self.clientID = clientID
        self.requestID = requestID
    }
}

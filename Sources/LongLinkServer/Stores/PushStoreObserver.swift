/// What a ``PushStore`` reports to the server that observes it (see
/// ``PushStore/startObserving(_:)``). Each closure is called on a thread of the store's and must
/// return quickly.
public struct PushStoreObserver: Sendable {
    /// Whether the server holds a connection of this principal now.
    public var isWatching: @Sendable (_ principal: String) -> Bool
    /// A push was stored for this principal (by any server).
    public var pushStored: @Sendable (_ principal: String) -> Void
    /// Notices may have been missed: read every watched principal again.
    public var noticesLost: @Sendable () -> Void
    /// A client logged in as this principal with an exclusive binding (on any server): sessions of
    /// the principal's other clients end.
    public var sessionStarted: @Sendable (_ principal: String, _ clientID: String) -> Void

    /// An observer of the four closures.
    public init(
        isWatching: @escaping @Sendable (_ principal: String) -> Bool,
        pushStored: @escaping @Sendable (_ principal: String) -> Void,
        noticesLost: @escaping @Sendable () -> Void,
        sessionStarted: @escaping @Sendable (_ principal: String, _ clientID: String) -> Void = { _, _ in }
    ) {
        self.isWatching = isWatching
        self.pushStored = pushStored
        self.noticesLost = noticesLost
        self.sessionStarted = sessionStarted
    }
}

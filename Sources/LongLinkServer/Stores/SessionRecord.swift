/// An exclusive login as a ``PushStore`` recorded it (see ``PushStore/sessionRecords(of:)``).
public struct SessionRecord: Sendable, Hashable {
    /// The principal it is a record of.
    public var principal: String
    /// The client that logged in.
    public var clientID: String
    /// How long ago it logged in, by the store's clock, when the record was read: sessions bound
    /// earlier than that end (an age, not a time, so that servers need no clock in common).
    public var age: Duration

    /// A record of `clientID`'s exclusive login as `principal`, `age` ago.
    public init(principal: String, clientID: String, age: Duration) {
        self.principal = principal
        self.clientID = clientID
        self.age = age
    }
}

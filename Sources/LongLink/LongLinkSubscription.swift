/// A subscription the client keeps entered: made with ``LongLinkClient/subscribe(_:timeout:)``,
/// replayed after every login, failover and migration until ``cancel()``.
///
/// ```swift
/// let room = try await client.subscribe(EnterRoom(room: 42, user: "alice"), leave: LeaveRoom(room: 42))
/// show(room.reply)                       // the members when the room was entered
/// for await replay in room.replays {      // after each reconnect, the room as it is now
///     if case .success(let members) = replay { show(members) }
/// }
/// ```
///
/// The reply's properties read through the handle (`room.members` for `room.reply.members`).
/// Releasing the handle does not end the subscription (the room stays entered); ``cancel()`` does.
/// That is deliberate: leaving is a request to the server that can fail or wait for a link, and a
/// `deinit` can neither wait for it nor report its failure; and an app that keeps a room entered
/// for the life of a session would otherwise have to keep a handle it never reads.
@dynamicMemberLookup
public final class LongLinkSubscription<Reply: Sendable>: Sendable {
    /// The reply to the request that made the subscription.
    public let reply: Reply
    /// The outcome of each replay, in order: the server's new reply after a reconnect, a failover
    /// or a migration, or the error of a replay the server refused (it is retried with the link's
    /// ``ClientConfiguration/backoff``). Ends when the subscription is cancelled or the client
    /// stops. Keeps the newest outcomes when nobody reads them.
    public let replays: AsyncStream<Result<Reply, LongLinkError>>

    let id: UInt64
    let client: LongLinkClient

    init(reply: Reply, replays: AsyncStream<Result<Reply, LongLinkError>>, id: UInt64, client: LongLinkClient) {
        self.reply = reply
        self.replays = replays
        self.id = id
        self.client = client
    }

    /// A property of ``reply``.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Reply, Value>) -> Value {
        reply[keyPath: keyPath]
    }

    /// Ends the subscription: it is no longer replayed, ``replays`` ends, and its leave request,
    /// when one was declared, is sent (queued while the link is down, within the client's
    /// ``ClientConfiguration/defaultTimeout``). Returns once the leave was answered; a failed one
    /// is logged. Calling it again does nothing.
    public func cancel() async {
        await client.endSubscription(id)
    }
}

/// A push store in this process that answers at once (``InMemoryPushStore``): the server calls it
/// on the event loop, without a task per read, ack or push, and it tells its observers as pushes
/// are stored, so that no notice is lost and no observation needs refreshing.
///
/// Internal: the public interface is ``PushStore`` alone. Its methods have names of their own, so
/// that no call in async code can pick a ``PushStore`` requirement or default in their place.
protocol ImmediatePushStore: PushStore {
    /// ``PushStore/append(_:)``, at once.
    func appendAtOnce(_ push: PushAppend) throws(LongLinkError) -> StoredPush

    /// ``PushStore/unacknowledged(_:)``, at once.
    func unacknowledgedAtOnce(_ read: PushRead) -> [StoredPush]

    /// ``PushStore/acknowledge(_:)``, at once.
    func acknowledgeAtOnce(_ acks: AcknowledgedPushes)

    /// How many pushes of `principal` wait for an acknowledgement (for tests).
    func unacknowledgedCount(principal: String) -> Int
}

extension InMemoryPushStore: ImmediatePushStore {
    func appendAtOnce(_ push: PushAppend) throws(LongLinkError) -> StoredPush {
        try append(push)
    }

    func unacknowledgedAtOnce(_ read: PushRead) -> [StoredPush] {
        unacknowledged(read)
    }

    func acknowledgeAtOnce(_ acks: AcknowledgedPushes) {
        acknowledge(acks)
    }
}

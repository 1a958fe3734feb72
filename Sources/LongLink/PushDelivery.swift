internal import LongLinkWire

/// A push handed over by a stream made with a ``PushAcknowledgement``: the message, the push it came
/// in, and ``ack()`` to tell the server the app is done with it.
///
/// ```swift
/// for await delivery in client.pushes(topic: "alerts", as: Alert.self, acknowledgement: .afterProcessing) {
///     try await store.save(delivery.message)
///     delivery.ack()
/// }
/// ```
public struct PushDelivery<Message: Sendable>: Sendable {
    /// The push, decoded (the ``Push`` itself for a stream of raw pushes).
    public let message: Message
    /// The push as it arrived.
    public let push: Push
    /// Nil when the stream acknowledged the push at hand-over.
    private let subscriber: PushSubscriber?

    init(message: Message, push: Push, subscriber: PushSubscriber?) {
        self.message = message
        self.push = push
        self.subscriber = subscriber
    }

    /// Acknowledges the push (batched with others, as at hand-over): the server forgets it. Does
    /// nothing for a best-effort push, a push acknowledged before, one of a stream that
    /// acknowledges at hand-over, and once the stream or the client ended: the push is the
    /// server's again then, and comes back to the next consumer.
    public func ack() {
        guard push.isReliable else { return }
        subscriber?.acknowledge(push.key)
    }
}

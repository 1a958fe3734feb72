extension LongLinkClient {
    /// Pushes on `topic` (all topics when `nil`) as ``PushDelivery`` values, acknowledged as
    /// `acknowledgement` says: with ``PushAcknowledgement/afterProcessing`` the app calls
    /// ``PushDelivery/ack()`` once it is done with each push, so that a push it was handling when it
    /// died (or its task was cancelled, or the client stopped) is sent again instead of lost.
    ///
    /// A push handed over and not acknowledged stays the stream's while it lives: the server's
    /// redelivery after a reconnect is not handed over a second time, and a late ``PushDelivery/ack()``
    /// goes out on the new link. When the stream ends (released, or a task waiting in it cancelled)
    /// its unacknowledged pushes are the server's again, and go to the other consumers of their
    /// topic or the next one made; when the client stops, to the next client logged in as the same
    /// user. A push several streams got is acknowledged once every one of them took it (an
    /// after-processing stream takes it with its ack). At most
    /// ``ClientConfiguration/unacknowledgedPushLimit`` reliable pushes wait in the stream and in the
    /// app's hands together. Otherwise the stream behaves as ``pushes(topic:)``.
    public func pushes(topic: String?, acknowledgement: PushAcknowledgement) -> AsyncStream<PushDelivery<Push>> {
        deliveries(TopicFilter(topic), acknowledgement: acknowledgement) { .deliver($0) }
    }

    /// Pushes on `topic` decoded as `T` with the configured codec, as ``PushDelivery`` values
    /// acknowledged as `acknowledgement` says (see ``pushes(topic:acknowledgement:)``). A push that
    /// does not decode is handled as in ``pushes(topic:as:)-4gdwt``, without an ack from the app.
    public func pushes<T: Decodable & Sendable>(
        topic: String, as type: T.Type, acknowledgement: PushAcknowledgement
    ) -> AsyncStream<PushDelivery<T>> {
        deliveries(.exact(topic), acknowledgement: acknowledgement, skipping(topic: topic, codecDecoder(T.self)))
    }

    /// A stream of deliveries of what `step` makes of each push the consumer of `filter` takes.
    func deliveries<T: Sendable>(
        _ filter: TopicFilter, acknowledgement: PushAcknowledgement,
        _ step: @escaping @Sendable (Push) -> PushStep<T>
    ) -> AsyncStream<PushDelivery<T>> {
        let subscription = PushSubscription(core: core, filter: filter, acknowledgement: acknowledgement)
        let acknowledger = acknowledgement == .afterProcessing ? subscription.subscriber : nil
        return AsyncStream(
            unfolding: {
                await subscription.next { push in
                    switch step(push) {
                    case .deliver(let message):
                        .deliver(PushDelivery(message: message, push: push, subscriber: acknowledger))
                    case .skip: .skip
                    case .release: .release
                    }
                }
            },
            onCancel: { subscription.cancel() })
    }
}

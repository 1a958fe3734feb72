/// Consuming the shared contract's topics: pushes decoded as the topic's message type with
/// ``ClientConfiguration/codec`` (or the type's own binary encoding), on the machinery of
/// ``pushes(topic:as:)-4gdwt`` and ``pushes(matching:)-(String)``.
extension LongLinkClient {
    /// The messages of `topic`, as an `AsyncStream`: the pushes on its name, or, when its name is a
    /// pattern (`quotes.*`), on every topic of the family it names (see ``TopicPattern``).
    ///
    /// ```swift
    /// for await alert in client.pushes(Alerts.self) { show(alert) }
    /// ```
    ///
    /// Delivery and acknowledgement are ``pushes(topic:as:)-4gdwt``'s, whatever the topic's
    /// ``LongLinkTopic/kind`` (the client takes what the server sends): a reliable push is
    /// acknowledged once the stream has handed it over, and one that does not decode is not handed
    /// over but logged, counted and acknowledged as a dead letter (see
    /// ``ClientConfiguration/undecodablePushDisposition``).
    public func pushes<T: LongLinkTopic>(_ topic: T.Type) -> AsyncStream<T.Message> {
        stream(of: T.self, filter: Self.filter(of: T.self))
    }

    /// The messages of one topic of a family (`client.pushes(Quotes.topic("AAPL"))`), as
    /// ``pushes(_:)-(T.Type)`` hands them over. A name that is not a member of the family (see
    /// ``LongLinkTopic/topic(_:)``) is followed as it is written, and the server never publishes to it.
    public func pushes<T: LongLinkTopic>(_ topic: TopicName<T>) -> AsyncStream<T.Message> {
        stream(of: T.self, filter: .exact(topic.text))
    }

    /// The messages of ``pushes(_:)-(T.Type)``, as a sequence that throws why it ended when the
    /// client ends it (see ``PushSequence``).
    public func throwingPushes<T: LongLinkTopic>(_ topic: T.Type) -> PushSequence<T.Message> {
        PushSequence(
            subscription: PushSubscription(core: core, filter: Self.filter(of: T.self)),
            step: skipping(topic: T.name, decoder(of: T.self)))
    }

    /// Every push of `topic`, decoded as its message or handed over as
    /// ``DecodedPush/undecodable(_:_:)``, each with its ``Push`` (whose ``Push/topic`` says which
    /// topic of a family it came on), as `decodedPushes(topic:as:)` hands them over.
    public func decodedPushes<T: LongLinkTopic>(_ topic: T.Type) -> PushSequence<DecodedPush<T.Message>> {
        PushSequence(
            subscription: PushSubscription(core: core, filter: Self.filter(of: T.self)),
            step: surfacing(topic: T.name, decoder(of: T.self)))
    }

    /// Decodes `push` as `T`'s message with the configured codec, as the typed streams do. For a
    /// push taken from an untyped stream (``pushes(topic:)``, ``pushes(matching:)-(String)``):
    /// ``Push/decode(as:codec:)`` uses JSON unless it is given a codec.
    public func decode<T: LongLinkTopic>(_ push: Push, as topic: T.Type) throws -> T.Message {
        if let error = push.payloadError { throw error }
        return try T.decodeMessage(from: push.payload, with: configuration.codec)
    }

    /// Decodes `push` as `type` with the configured codec (``ClientConfiguration/codec``), where
    /// ``Push/decode(as:codec:)`` uses JSON unless it is given one.
    public func decode<Message: Decodable>(_ push: Push, as type: Message.Type) throws -> Message {
        if let error = push.payloadError { throw error }
        return try configuration.codec.decode(Message.self, from: push.payload)
    }

    // MARK: Helpers

    /// The pushes `T`'s streams take: its one topic, or the family its pattern names.
    private static func filter<T: LongLinkTopic>(of type: T.Type) -> TopicFilter {
        T.pattern.map { .pattern($0) } ?? .exact(T.name)
    }

    private func decoder<T: LongLinkTopic>(of type: T.Type) -> @Sendable (Push) throws -> T.Message {
        let codec = configuration.codec
        return { try T.decodeMessage(from: $0.payload, with: codec) }
    }

    private func stream<T: LongLinkTopic>(of type: T.Type, filter: TopicFilter) -> AsyncStream<T.Message> {
        let subscription = PushSubscription(core: core, filter: filter)
        let step = skipping(topic: T.name, decoder(of: T.self))
        return AsyncStream(unfolding: { await subscription.next(step) }, onCancel: { subscription.cancel() })
    }
}

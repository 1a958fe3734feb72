extension LongLinkClient {
    /// Pushes whose topic matches `pattern`, NATS-style: `quotes.*` for `quotes.AAPL`, `quotes.>`
    /// for `quotes.AAPL` and `quotes.AAPL.bid` (see ``TopicPattern``). Throws
    /// ``LongLinkError/Code-swift.struct/invalidArgument`` for an invalid pattern.
    ///
    /// The client matches: the server pushes to the user as ever. Otherwise the stream is
    /// ``pushes(topic:)``'s: a push that matches this stream and others (a stream of its exact topic,
    /// say) goes to each of them and is acknowledged once all have taken it. A pattern without
    /// wildcards is its topic, and costs what ``pushes(topic:)`` costs; streams of exact topics are
    /// found by a dictionary lookup whether pattern streams exist or not, and each pushed topic is
    /// matched against the patterns of the live pattern streams only.
    public func pushes(matching pattern: String) throws(LongLinkError) -> AsyncStream<Push> {
        pushes(matching: try TopicPattern(pattern))
    }

    /// The pushes of ``pushes(matching:)-(String)``, for a pattern parsed before.
    public func pushes(matching pattern: TopicPattern) -> AsyncStream<Push> {
        let subscription = PushSubscription(core: core, filter: TopicFilter(pattern))
        return AsyncStream(unfolding: { await subscription.next() }, onCancel: { subscription.cancel() })
    }

    /// The pushes of ``pushes(matching:)-(String)`` as ``PushDelivery`` values, acknowledged as
    /// `acknowledgement` says (see ``pushes(topic:acknowledgement:)``).
    public func pushes(matching pattern: String, acknowledgement: PushAcknowledgement)
        throws(LongLinkError) -> AsyncStream<PushDelivery<Push>>
    {
        deliveries(TopicFilter(try TopicPattern(pattern)), acknowledgement: acknowledgement) { .deliver($0) }
    }
}

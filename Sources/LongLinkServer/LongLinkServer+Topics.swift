/// Producing on the shared contract's topics: the message encoded with
/// ``ServerConfiguration/codec``, pushed reliably or best effort as its ``LongLinkTopic/kind`` says.
extension LongLinkServer {
    /// Publishes `message` on `topic` (a topic of one name, such as `alerts`) to `principal`.
    ///
    /// A ``TopicKind/reliable`` topic's push is stored and sent as ``push(to:topic:payload:)``
    /// does, and its seq returned; a ``TopicKind/bestEffort`` one is sent to the principal's open
    /// connections as ``pushBestEffort(to:topic:payload:)`` does (dropped where a connection is
    /// not writable, or when larger than a frame may be), and 0 returned. Throws
    /// ``LongLinkError/Code-swift.struct/invalidArgument`` when the message does not encode or
    /// `topic` names a family of topics (`quotes.*`: publish to one of them, with
    /// ``LongLinkTopic/topic(_:)``), and what ``push(to:topic:payload:)`` throws for a reliable one.
    ///
    /// ```swift
    /// try await server.publish(Alerts.self, Alert(symbol: "AAPL", price: 190), to: "alice")
    /// ```
    @discardableResult
    public func publish<T: LongLinkTopic>(_ topic: T.Type, _ message: T.Message, to principal: String)
        async throws(LongLinkError) -> UInt64
    {
        if let pattern = T.pattern {
            throw LongLinkError(
                code: .invalidArgument,
                message: "\(T.self) is a family of topics (\(pattern)): publish to one, \(T.self).topic(...)")
        }
        return try await publish(T.self, on: T.name, message, to: principal)
    }

    /// Publishes `message` on one topic of a family (`Quotes.topic("AAPL")`, which is `quotes.AAPL`
    /// when `Quotes.name` is `quotes.*`) to `principal`, as ``publish(_:_:to:)-(T.Type,_,_)``
    /// does. Throws ``LongLinkError/Code-swift.struct/invalidArgument`` when the name is not a
    /// member of the family (see ``LongLinkTopic/topic(_:)``).
    @discardableResult
    public func publish<T: LongLinkTopic>(_ topic: TopicName<T>, _ message: T.Message, to principal: String)
        async throws(LongLinkError) -> UInt64
    {
        if let problem = topic.problem {
            throw LongLinkError(code: .invalidArgument, message: "\(T.self): \(problem)")
        }
        return try await publish(T.self, on: topic.text, message, to: principal)
    }

    private func publish<T: LongLinkTopic>(_ type: T.Type, on name: String, _ message: T.Message, to principal: String)
        async throws(LongLinkError) -> UInt64
    {
        let payload: [UInt8]
        do {
            payload = try T.encodeMessage(message, with: configuration.codec)
        } catch {
            throw LongLinkError(
                code: .invalidArgument, message: "a message of \(T.self) does not encode for topic \(name)",
                underlying: error)
        }
        guard T.kind.isReliable else {
            pushBestEffort(to: principal, topic: name, payload: payload)
            return 0
        }
        return try await push(to: principal, topic: name, payload: payload)
    }
}

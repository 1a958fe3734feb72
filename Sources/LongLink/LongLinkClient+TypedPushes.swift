internal import LongLinkWire

extension LongLinkClient {
    /// Pushes on `topic` decoded as `T` with the configured codec, as an `AsyncStream`.
    ///
    /// A push that does not decode is not handed over: it is logged (its topic and seq, never its
    /// payload), counted in ``ClientStatistics/undecodablePushes`` and given to
    /// ``ClientConfiguration/undecodablePushHandler``; then a reliable one is acknowledged, a dead
    /// letter counted in ``ClientStatistics/deadLetterPushes``, unless
    /// ``ClientConfiguration/undecodablePushDisposition`` says to leave it with the server (see
    /// ``UndecodablePushDisposition``). It never comes back on its own. To see such pushes in the
    /// stream itself, iterate `decodedPushes(topic:as:)` instead.
    public func pushes<T: Decodable & Sendable>(topic: String, as type: T.Type) -> AsyncStream<T> {
        typedStream(topic: topic, step: skipping(topic: topic, codecDecoder(T.self)))
    }

    /// Pushes on `topic` decoded as the binary message `T` (a protobuf message, say), as an
    /// `AsyncStream`; a push that does not decode is handled as in
    /// ``pushes(topic:as:)-4gdwt``.
    public func pushes<T: LongLinkBinaryMessage>(topic: String, as type: T.Type) -> AsyncStream<T> {
        typedStream(topic: topic, step: skipping(topic: topic, { try T(serializedBytes: $0.payload) }))
    }

    /// The pushes of ``pushes(topic:as:)-4gdwt``, as a sequence that throws why it ended when
    /// the client ends it (see ``PushSequence``).
    public func throwingPushes<T: Decodable & Sendable>(topic: String, as type: T.Type) -> PushSequence<T> {
        PushSequence(subscription: subscription(topic), step: skipping(topic: topic, codecDecoder(T.self)))
    }

    /// The pushes of ``pushes(topic:as:)-4gdwt`` for a binary message type, as a sequence that
    /// throws why it ended when the client ends it (see ``PushSequence``).
    public func throwingPushes<T: LongLinkBinaryMessage>(topic: String, as type: T.Type) -> PushSequence<T> {
        PushSequence(
            subscription: subscription(topic), step: skipping(topic: topic, { try T(serializedBytes: $0.payload) }))
    }

    /// Every push on `topic`, decoded as `T` with the configured codec or handed over as
    /// ``DecodedPush/undecodable(_:_:)`` with a ``LongLinkError/Code-swift.struct/decodingFailed``
    /// error naming the topic. A reliable push is acknowledged once its element was handed over,
    /// decoded or not, so the app sees every push before it is acknowledged. Ends as
    /// ``throwingPushes(topic:)`` does.
    public func decodedPushes<T: Decodable & Sendable>(topic: String, as type: T.Type)
        -> PushSequence<DecodedPush<T>>
    {
        PushSequence(subscription: subscription(topic), step: surfacing(topic: topic, codecDecoder(T.self)))
    }

    /// Every push on `topic`, decoded as the binary message `T` or handed over as undecodable (see
    /// `decodedPushes(topic:as:)`).
    public func decodedPushes<T: LongLinkBinaryMessage>(topic: String, as type: T.Type)
        -> PushSequence<DecodedPush<T>>
    {
        PushSequence(
            subscription: subscription(topic), step: surfacing(topic: topic, { try T(serializedBytes: $0.payload) }))
    }

    // MARK: Helpers

    private func subscription(_ topic: String) -> PushSubscription {
        PushSubscription(core: core, topic: topic)
    }

    private func typedStream<T: Sendable>(topic: String, step: @escaping @Sendable (Push) -> PushStep<T>)
        -> AsyncStream<T>
    {
        let subscription = subscription(topic)
        return AsyncStream(unfolding: { await subscription.next(step) }, onCancel: { subscription.cancel() })
    }

    func codecDecoder<T: Decodable & Sendable>(_ type: T.Type) -> @Sendable (Push) throws -> T {
        let codec = configuration.codec
        return { try codec.decode(T.self, from: $0.payload) }
    }

    /// Decodes with `decode`, or gives the failure as a ``LongLinkError`` naming the topic.
    private static func decoding<T>(_ push: Push, as type: T.Type, _ decode: (Push) throws -> T)
        -> Result<T, LongLinkError>
    {
        if let error = push.payloadError { return .failure(error) }
        do {
            return .success(try decode(push))
        } catch {
            return .failure(
                LongLinkError(
                    code: .decodingFailed, message: "a push on \(push.topic) did not decode as \(T.self)",
                    underlying: error))
        }
    }

    /// The step of the skipping streams: decoded pushes go to the app; the others to the handler,
    /// then the dead-letter path: a reliable one is acknowledged (taken without being handed over),
    /// or left with the server when ``ClientConfiguration/undecodablePushDisposition`` says so;
    /// each is logged and counted.
    func skipping<T: Sendable>(topic: String, _ decode: @escaping @Sendable (Push) throws -> T)
        -> @Sendable (Push) -> PushStep<T>
    {
        let logger = configuration.logger
        let handler = configuration.undecodablePushHandler
        let decide = configuration.undecodablePushDisposition
        let core = self.core
        return { push in
            switch Self.decoding(push, as: T.self, decode) {
            case .success(let value):
                return .deliver(value)
            case .failure(let error):
                handler?(push, error)
                let disposition = push.isReliable ? decide?(push, error) ?? .acknowledge : .acknowledge
                let deadLetter = push.isReliable && disposition == .acknowledge
                // Topic and seq name the push; its payload may be anything, and is never logged.
                logger?(
                    LogRecord(
                        bounded: .error,
                        !push.isReliable
                            ? "a best-effort push did not decode; dropped"
                            : deadLetter
                                ? "a push did not decode; acknowledged as a dead letter"
                                : "a push did not decode; left unacknowledged with the server",
                        metadata: [
                            "topic": push.topic, "type": "\(T.self)", "seq": "\(push.seq)", "epoch": "\(push.epoch)",
                        ]))
                core.onLoop { core in
                    core.machine.stats.undecodablePushes += 1
                    if deadLetter { core.machine.stats.deadLetterPushes += 1 }
                }
                return disposition == .leaveUnacknowledged ? .release : .skip
            }
        }
    }

    /// The step of `decodedPushes(topic:as:)`: every push becomes an element.
    func surfacing<T: Sendable>(topic: String, _ decode: @escaping @Sendable (Push) throws -> T)
        -> @Sendable (Push) -> PushStep<DecodedPush<T>>
    {
        let core = self.core
        return { push in
            switch Self.decoding(push, as: T.self, decode) {
            case .success(let value):
                return .deliver(.message(value, push))
            case .failure(let error):
                core.onLoop { $0.machine.stats.undecodablePushes += 1 }
                return .deliver(.undecodable(push, error))
            }
        }
    }
}

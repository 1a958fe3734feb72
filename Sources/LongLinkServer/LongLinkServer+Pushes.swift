/// Producing reliable pushes.
extension LongLinkServer {
    /// Stores a reliable push for `principal` in the server's push store (its own, or the one a
    /// fleet shares) and sends it on the principal's synced connections, on whichever server of
    /// the fleet they are.
    ///
    /// Returns the push's seq once the store holds it as durably as the store promises (see
    /// ``PushStore/append(_:)``): in memory for an ``InMemoryPushStore``, which answers at once.
    /// Throws ``LongLinkError/Code-swift.struct/resourceExhausted`` when the principal's store is
    /// full (the producer decides what to do; nothing stored is dropped),
    /// ``LongLinkError/Code-swift.struct/invalidArgument`` when the push is larger than
    /// ``ServerConfiguration/maxOutgoingFrameBytes`` (it is not stored: no client could read it),
    /// and ``LongLinkError/Code-swift.struct/unavailable`` when the store cannot be reached: the
    /// push was then not stored (or, if the store's reply was lost, may have been; a client never
    /// receives a seq twice).
    @discardableResult
    public func push(to principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> UInt64 {
        try core.checkPushSize(topic: topic, payload: payload)
        let push = PushAppend(principal: principal, topic: topic, payload: payload)
        // A store in memory answers on the spot: no suspension, no task.
        if let store = core.immediatePushes {
            return stored(try store.appendAtOnce(push), for: principal)
        }
        do {
            return stored(try await core.pushes.append(push), for: principal)
        } catch {
            if error.code == .unavailable { core.counters.sharedStoreFailures.increment() }
            throw error
        }
    }

    /// Stores `message`, encoded with `codec` (JSON by default, not ``ServerConfiguration/codec``:
    /// pass `codec: configuration.codec`, or publish a ``LongLinkTopic`` with
    /// ``publish(_:_:to:)-(T.Type,_,_)``, which uses it), as a reliable push for `principal`, as
    /// ``push(to:topic:payload:)`` does. Throws ``LongLinkError/Code-swift.struct/invalidArgument``
    /// when the message does not encode (nothing is stored).
    @discardableResult
    public func push<Message: Encodable>(
        to principal: String, topic: String, message: Message, codec: some PayloadCodec = JSONPayloadCodec()
    ) async throws(LongLinkError) -> UInt64 {
        let payload: [UInt8]
        do {
            payload = try codec.encode(message)
        } catch {
            throw LongLinkError(
                code: .invalidArgument, message: "the push on topic \(topic) does not encode",
                underlying: error)
        }
        return try await push(to: principal, topic: topic, payload: payload)
    }

    /// Counts a stored push and wakes the principal's connections here at once (other servers of
    /// a fleet when the store's notice reaches them).
    private func stored(_ push: StoredPush, for principal: String) -> UInt64 {
        core.counters.reliablePushesStored.increment()
        for connection in core.connections(of: principal) {
            connection.requestPush()
        }
        return push.seq
    }
}

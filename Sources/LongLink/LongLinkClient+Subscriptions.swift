extension LongLinkClient {
    /// The most replay outcomes a subscription's ``LongLinkSubscription/replays`` keeps unread.
    static let replayBufferLimit = 16

    /// Sends `request`, returns its reply in a handle, and keeps the subscription: the client
    /// sends the request again after every login, failover and migration, before queued requests,
    /// in the order the subscriptions were made, until ``LongLinkSubscription/cancel()``.
    ///
    /// While the link is down the request waits for the next login. Throws what a request would
    /// (the server's refusal, ``LongLinkError/Code-swift.struct/deadlineExceeded`` after `timeout`,
    /// ``ClientConfiguration/defaultTimeout`` when nil); then nothing is kept.
    public func subscribe<Request: LongLinkRequest>(_ request: Request, timeout: Duration? = nil) async throws
        -> LongLinkSubscription<Request.Reply>
    {
        try await subscribe(request, leave: nil, timeout: timeout)
    }

    /// ``subscribe(_:timeout:)`` with the request that ends the subscription on the server, sent
    /// by ``LongLinkSubscription/cancel()`` (a room's leave).
    public func subscribe<Request: LongLinkRequest, Leave: LongLinkRequest>(
        _ request: Request, leave: Leave, timeout: Duration? = nil
    ) async throws -> LongLinkSubscription<Request.Reply> {
        let codec = configuration.codec
        let leave = Subscription(method: Leave.method, payload: try leave.encodePayload(with: codec))
        return try await subscribe(request, leave: leave, timeout: timeout)
    }

    /// ``subscribe(_:timeout:)`` with bytes: `method` and `payload`, and `leave` sent on cancel.
    public func subscribe(
        method: String, payload: [UInt8] = [], leave: Subscription? = nil, timeout: Duration? = nil
    ) async throws -> LongLinkSubscription<[UInt8]> {
        try await keep(method: method, payload: payload, leave: leave, timeout: timeout) { $0 }
    }

    private func subscribe<Request: LongLinkRequest>(_ request: Request, leave: Subscription?, timeout: Duration?)
        async throws -> LongLinkSubscription<Request.Reply>
    {
        let codec = configuration.codec
        return try await keep(
            method: Request.method, payload: try request.encodePayload(with: codec), leave: leave, timeout: timeout
        ) { payload throws(LongLinkError) in try Request.decodedReply(payload, codec: codec) }
    }

    private func keep<Reply: Sendable>(
        method: String, payload: [UInt8], leave: Subscription?, timeout: Duration?,
        decode: @escaping @Sendable ([UInt8]) throws(LongLinkError) -> Reply
    ) async throws -> LongLinkSubscription<Reply> {
        let (replays, continuation) = AsyncStream<Result<Reply, LongLinkError>>.makeStream(
            bufferingPolicy: .bufferingNewest(Self.replayBufferLimit))
        let entered = try await core.enterSubscription(
            method: method, payload: payload, leave: leave,
            deadline: configuration.clock.now.advanced(by: timeout ?? configuration.defaultTimeout),
            deliver: { outcome in
                let decoded = outcome.flatMap { payload in Result { () throws(LongLinkError) in try decode(payload) } }
                continuation.yield(decoded)
            },
            finish: { continuation.finish() })
        do {
            let reply = try decode(entered.reply)
            return LongLinkSubscription(reply: reply, replays: replays, id: entered.id, client: self)
        } catch {
            // No handle to end it with: it ends here, as `cancel()` would end it.
            await endSubscription(entered.id)
            throw error
        }
    }

    /// Ends subscription `id` and sends its leave request, if it has one to send.
    func endSubscription(_ id: UInt64) async {
        guard let leave = await core.cancelSubscription(id) else { return }
        do {
            _ = try await request(leave.method, payload: leave.payload)
        } catch {
            configuration.logger?(LogRecord(bounded: .warning, "leaving with \(leave.method) failed: \(error)"))
        }
    }
}

internal import LongLinkWire

extension LongLinkClient {
    /// The client's response cache: what calls with a ``RequestOptions/cache`` policy read and
    /// fill, and what the app invalidates.
    public var cache: ResponseCache { core.responseCache }

    /// The request layer in front of the core for calls that use the cache or coalescing.
    func cachedRequest(_ method: String, payload: [UInt8], options: RequestOptions) async throws -> [UInt8] {
        let key = ResponseCache.key(method: method, payload: payload, explicit: options.cacheKey)
        let cache = self.cache
        // The reply belongs to whoever was logged in when the call was made, not when it arrives.
        let principal = Caller(principal: cache.principal, session: core.session)
        switch options.cache.kind {
        case .networkOnly:
            return try await network(method, payload: payload, options: options, key: key, principal: principal)
        case .cacheFirst(let maxAge):
            if let hit = cache.lookup(key, maxAge: maxAge) { return hit }
            return try await fetchAndStore(method, payload: payload, options: options, key: key, principal: principal)
        case .cacheOnly(let maxAge):
            if let hit = cache.lookup(key, maxAge: maxAge) { return hit }
            throw LongLinkError(code: .notFound, message: "no cached reply for \(method)")
        case .networkFirst(let maxAge):
            if await core.currentState.phase != .connected, let hit = cache.lookup(key, maxAge: maxAge) { return hit }
            do {
                return try await fetchAndStore(
                    method, payload: payload, options: options, key: key, principal: principal)
            } catch let error as LongLinkError {
                guard await Self.isOffline(error, core: core), let hit = cache.lookup(key, maxAge: maxAge) else {
                    throw error
                }
                return hit
            }
        }
    }

    /// The cached reply of a call (if any, of any age), then the network's, which is stored. Ends
    /// after the network's reply, or throws its error (after the cached one was yielded).
    public func requestCacheAndNetwork(
        _ method: String, payload: [UInt8] = [], options: RequestOptions = RequestOptions()
    ) -> AsyncThrowingStream<CachedReply, any Error> {
        let key = ResponseCache.key(method: method, payload: payload, explicit: options.cacheKey)
        let principal = Caller(principal: cache.principal, session: core.session)
        return AsyncThrowingStream { continuation in
            let task = Task {
                if let hit = self.cache.lookup(key, maxAge: nil) {
                    continuation.yield(CachedReply(payload: hit, isFromCache: true))
                }
                do {
                    let fresh = try await self.fetchAndStore(
                        method, payload: payload, options: options, key: key, principal: principal)
                    continuation.yield(CachedReply(payload: fresh, isFromCache: false))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Who made a call: the principal and the session (``ClientCore/session``) current then. Its
    /// reply is stored, and its flight shared, under them only.
    private struct Caller {
        let principal: String
        let session: UInt64
    }

    private func fetchAndStore(
        _ method: String, payload: [UInt8], options: RequestOptions, key: String, principal: Caller
    ) async throws -> [UInt8] {
        let reply = try await network(method, payload: payload, options: options, key: key, principal: principal)
        cache.store(key, payload: reply, method: method, principal: principal.principal, session: principal.session)
        return reply
    }

    /// The round trip, shared with identical calls in flight when the call coalesces.
    private func network(
        _ method: String, payload: [UInt8], options: RequestOptions, key: String, principal: Caller
    ) async throws -> [UInt8] {
        let deadline = configuration.clock.now.advanced(by: options.timeout ?? configuration.defaultTimeout)
        let session = principal.session
        guard options.coalesces else {
            return try await sendRequest(method, payload: payload, options: options, deadline: deadline, session: session)
        }
        let flightKey = ResponseCache.flightKey(principal: principal.principal, session: session, key: key)
        let core = self.core
        return try await coalescer.run(
            flightKey, payloadBytes: payload.count, deadline: deadline,
            sleep: { try await core.clock.sleep(until: deadline, on: core.loop) },
            start: {
                try await self.sendRequest(method, payload: payload, options: options, deadline: deadline, session: session)
            })
    }

    /// Errors after which ``CachePolicy/networkFirst(maxAge:)`` falls back to the cache.
    private static func isOffline(_ error: LongLinkError, core: ClientCore) async -> Bool {
        let offline: [LongLinkError.Code] = [
            .unavailable, .connectionLost, .connectionRefused, .connectTimeout, .connectionReset,
            .connectionClosed, .hostUnreachable, .addressResolutionFailed,
        ]
        if offline.contains(error.code) { return true }
        guard error.code == .deadlineExceeded else { return false }
        return await core.currentState.phase != .connected
    }
}

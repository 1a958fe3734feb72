/// The subscriptions' side of the supervisor: the replay in every login (before the queue opens)
/// and the keeper, which sends what is made or due between logins.
extension Supervisor {
    /// Runs the supervisor with the keeper beside it, both children of `run()`.
    func runKeepingSubscriptions() async throws {
        await core.startSubscriptionKeeper()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await keepSubscriptions() }
            let outcome: Result<Void, any Error>
            do {
                try await run()
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            await core.stopSubscriptionKeeper()
            try await group.waitForAll()
            try outcome.get()
        }
    }

    /// Replays every subscription on the link of `generation`, in the order they were made,
    /// each awaited. A replay the server refuses is reported on its handle and retried later;
    /// only a lost link fails the login.
    func replaySubscriptions(on generation: UInt64) async throws {
        while true {
            let sends = await core.subscriptionsToReplay(generation)
            guard !sends.isEmpty else { return }
            for send in sends {
                let result = await self.send(send)
                await core.subscriptionOutcome(send, result)
                if case .failure(let error) = result, SubscriptionBook.isLinkLoss(error) { throw error }
            }
        }
    }

    /// Sends what the core hands over until the client stops, each send in a task of its own so
    /// that a slow one holds up no other.
    func keepSubscriptions() async {
        await withDiscardingTaskGroup { group in
            while let work = await core.nextSubscriptionWork() {
                for item in work {
                    group.addTask {
                        switch item {
                        case .send(let send):
                            await core.subscriptionOutcome(send, await self.send(send))
                        case .leave(let leave):
                            await self.leave(leave)
                        }
                    }
                }
            }
        }
    }

    /// One subscription request on the link of its generation only.
    private func send(_ send: SubscriptionBook.Send) async -> Result<[UInt8], LongLinkError> {
        let request = PendingRequest(
            id: makeRequestID(), method: send.method, payload: send.payload,
            deadline: configuration.clock.now.advanced(by: configuration.defaultTimeout), idempotent: false,
            bypassesGate: true, linkGeneration: send.generation)
        do {
            return .success(try await core.perform(request))
        } catch {
            return .failure(Self.wrap(error))
        }
    }

    private func leave(_ leave: Subscription) async {
        let request = PendingRequest(
            id: makeRequestID(), method: leave.method, payload: leave.payload,
            deadline: configuration.clock.now.advanced(by: configuration.defaultTimeout), idempotent: false)
        do {
            _ = try await core.perform(request)
        } catch {
            configuration.logger?(LogRecord(bounded: .warning, "leaving with \(leave.method) failed: \(error)"))
        }
    }
}

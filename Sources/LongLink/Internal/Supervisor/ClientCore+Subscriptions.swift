internal import LongLinkTransport
import Synchronization

/// Where a run-time subscription's outcomes go: the caller of `subscribe` waiting for the first
/// reply, then the handle's stream of replays.
struct SubscriptionSink {
    var first: CheckedContinuation<[UInt8], any Error>?
    let deliver: @Sendable (Result<[UInt8], LongLinkError>) -> Void
    let finish: @Sendable () -> Void
}

/// The caller's side of one `subscribe` until its first reply: the id the core gave it, and
/// whether the caller gave up before the core registered it.
final class SubscriptionTicket: Sendable {
    let id = Atomic<UInt64>(.max)
    let abandoned = Atomic<Bool>(false)
}

/// One piece of the keeper's work (see ``Supervisor/keepSubscriptions()``).
enum SubscriptionWork: Sendable {
    /// A subscription made since the login, or a failed replay whose backoff passed.
    case send(SubscriptionBook.Send)
    /// The leave request of a subscription given up before its first reply.
    case leave(Subscription)
}

/// The core's subscription state: the book, the sinks, the keeper's wait.
struct SubscriptionState {
    var book: SubscriptionBook
    var sinks: [UInt64: SubscriptionSink] = [:]
    var keeper: CheckedContinuation<[SubscriptionWork]?, Never>?
    var keeperStopped = false
    var leaves: [Subscription] = []
    var retryTimer: (any ScheduledWork)?
}

extension ClientCore {
    // MARK: The caller's side

    /// Registers a subscription and waits for its first reply (from a send on the open link, or
    /// from the next login's replay), within `deadline`. Returns its id and the reply.
    nonisolated func enterSubscription(
        method: String, payload: [UInt8], leave: Subscription?, deadline: ContinuousClock.Instant,
        deliver: @escaping @Sendable (Result<[UInt8], LongLinkError>) -> Void,
        finish: @escaping @Sendable () -> Void
    ) async throws -> (id: UInt64, reply: [UInt8]) {
        if Task.isCancelled { throw CancellationError() }
        let ticket = SubscriptionTicket()
        let session = self.session
        let reply = try await withThrowingTaskGroup(of: Void.self, returning: [UInt8].self) { group in
            group.addTask {
                guard (try? await self.clock.sleep(until: deadline, on: self.loop)) != nil else { return }
                self.onLoop {
                    $0.abandonSubscription(
                        ticket,
                        LongLinkError(code: .deadlineExceeded, message: "no reply to \(method) within its timeout"))
                }
            }
            defer { group.cancelAll() }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let sink = SubscriptionSink(first: continuation, deliver: deliver, finish: finish)
                    onLoop {
                        $0.registerSubscription(
                            ticket, method: method, payload: payload, leave: leave, deadline: deadline,
                            session: session, sink)
                    }
                }
            } onCancel: {
                ticket.abandoned.store(true, ordering: .releasing)
                onLoop { $0.abandonSubscription(ticket, CancellationError()) }
            }
        }
        return (ticket.id.load(ordering: .acquiring), reply)
    }

    // MARK: The core's side

    func registerSubscription(
        _ ticket: SubscriptionTicket, method: String, payload: [UInt8], leave: Subscription?,
        deadline: ContinuousClock.Instant, session: UInt64, _ sink: SubscriptionSink
    ) {
        if ticket.abandoned.load(ordering: .acquiring) {
            sink.first?.resume(throwing: CancellationError())
            return
        }
        do throws(LongLinkError) {
            if let error = machine.links.admissionError { throw error }
            // Made in a session that ended since: it was the last user's.
            guard isCurrent(session: session) else { throw endedSessionError }
            // The timeout's job may have run before this one: it found nothing to expire.
            if clock.now >= deadline {
                throw LongLinkError(code: .deadlineExceeded, message: "the deadline passed before \(method) was sent")
            }
            let id = try subscriptions.book.add(method: method, payload: payload, leave: leave)
            ticket.id.store(id, ordering: .releasing)
            subscriptions.sinks[id] = sink
            nudgeSubscriptions()
        } catch {
            sink.first?.resume(throwing: error)
        }
    }

    /// The caller of `subscribe` gave up (timeout, cancellation) before the first reply: the
    /// subscription is dropped, and left when its request may have reached the server.
    func abandonSubscription(_ ticket: SubscriptionTicket, _ error: any Error) {
        let id = ticket.id.load(ordering: .acquiring)
        guard let first = subscriptions.sinks[id]?.first else { return }
        subscriptions.sinks[id] = nil
        if let leave = subscriptions.book.remove(id) {
            subscriptions.leaves.append(leave)
            nudgeSubscriptions()
        }
        first.resume(throwing: error)
    }

    /// The app ended the subscription: no more replays; returns its leave request, if it has one
    /// to send.
    func cancelSubscription(_ id: UInt64) -> Subscription? {
        subscriptions.sinks.removeValue(forKey: id)?.finish()
        return subscriptions.book.remove(id)
    }

    /// The login of `generation` replays these, in order, before the queue opens.
    func subscriptionsToReplay(_ generation: UInt64) -> [SubscriptionBook.Send] {
        subscriptions.book.replay(on: generation)
    }

    /// Applies the outcome of one subscription send.
    func subscriptionOutcome(_ send: SubscriptionBook.Send, _ result: Result<[UInt8], LongLinkError>) {
        let action = subscriptions.book.outcome(
            send.id, generation: send.generation, result, now: clock.now, random: .random(in: 0...1))
        switch action {
        case .resolveFirst(let reply):
            subscriptions.sinks[send.id]?.first?.resume(returning: reply)
            subscriptions.sinks[send.id]?.first = nil
        case .failFirst(let error):
            subscriptions.sinks.removeValue(forKey: send.id)?.first?.resume(throwing: error)
        case .replayed(let reply):
            subscriptions.sinks[send.id]?.deliver(.success(reply))
        case .replayFailed(let error, _):
            log(.warning, "replaying \(send.method) failed: \(error)", metadata: ["code": "\(error.code)"])
            subscriptions.sinks[send.id]?.deliver(.failure(error))
            nudgeSubscriptions()
        case .none:
            break
        }
    }

    // MARK: The keeper

    /// The keeper's next work, when there is some; nil once the client stops.
    func nextSubscriptionWork() async -> [SubscriptionWork]? {
        await withCheckedContinuation { continuation in
            subscriptions.keeper = continuation
            nudgeSubscriptions()
        }
    }

    /// Hands the keeper what is due now, or arms a timer for the next retry.
    func nudgeSubscriptions() {
        guard let keeper = subscriptions.keeper else { return }
        subscriptions.retryTimer?.cancel()
        subscriptions.retryTimer = nil
        if subscriptions.keeperStopped {
            subscriptions.keeper = nil
            keeper.resume(returning: nil)
            return
        }
        var open: UInt64?
        if case .open(let generation) = machine.phase { open = generation }
        let now = clock.now
        let work =
            subscriptions.leaves.map(SubscriptionWork.leave)
            + subscriptions.book.due(now: now, open: open).map(SubscriptionWork.send)
        subscriptions.leaves = []
        guard work.isEmpty else {
            subscriptions.keeper = nil
            keeper.resume(returning: work)
            return
        }
        if open != nil, let retryAt = subscriptions.book.nextRetry {
            subscriptions.retryTimer = clock.schedule(at: max(retryAt, now), on: loop) { [self] in
                assumeIsolated { $0.nudgeSubscriptions() }
            }
        }
    }

    func startSubscriptionKeeper() {
        subscriptions.keeperStopped = false
    }

    /// `run()` ends: the keeper stops, callers waiting for a first reply get why, handles' streams
    /// end and their subscriptions are dropped (the static ones stay).
    func stopSubscriptionKeeper() {
        subscriptions.keeperStopped = true
        nudgeSubscriptions()
        endRunTimeSubscriptions(stopReason)
    }

    /// The session ends for good (a kick, a rejected login, a logout, a shutdown): the run-time
    /// subscriptions were the last principal's, so none is replayed for the next one; callers
    /// waiting for a first reply get `error`, handles' streams end, leaves not sent yet are
    /// dropped with the link they were for. The static ones stay: they are the app's
    /// configuration, replayed for every principal, with no retry state of the last session.
    func endRunTimeSubscriptions(_ error: LongLinkError) {
        subscriptions.leaves = []
        subscriptions.retryTimer?.cancel()
        subscriptions.retryTimer = nil
        subscriptions.book.endSession()
        let sinks = subscriptions.sinks
        subscriptions.sinks = [:]
        for sink in sinks.values {
            sink.first?.resume(throwing: error)
            sink.finish()
        }
    }
}

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
            let id = try machine.subscriptions.add(method: method, payload: payload, leave: leave)
            ticket.id.store(id, ordering: .releasing)
            waiters.subscriptionSinks[id] = sink
            nudgeSubscriptions()
        } catch {
            sink.first?.resume(throwing: error)
        }
    }

    /// The caller of `subscribe` gave up (timeout, cancellation) before the first reply: the
    /// subscription is dropped, and left when its request may have reached the server.
    func abandonSubscription(_ ticket: SubscriptionTicket, _ error: any Error) {
        let id = ticket.id.load(ordering: .acquiring)
        guard let first = waiters.subscriptionSinks[id]?.first else { return }
        waiters.subscriptionSinks[id] = nil
        if let leave = machine.subscriptions.remove(id) {
            machine.subscriptionLeaves.append(leave)
            nudgeSubscriptions()
        }
        first.resume(throwing: error)
    }

    /// The app ended the subscription: no more replays; returns its leave request, if it has one
    /// to send.
    func cancelSubscription(_ id: UInt64) -> Subscription? {
        waiters.subscriptionSinks.removeValue(forKey: id)?.finish()
        return machine.subscriptions.remove(id)
    }

    /// The login of `generation` replays these, in order, before the queue opens.
    func subscriptionsToReplay(_ generation: UInt64) -> [SubscriptionBook.Send] {
        machine.subscriptions.replay(on: generation)
    }

    /// Applies the outcome of one subscription send.
    func subscriptionOutcome(_ send: SubscriptionBook.Send, _ result: Result<[UInt8], LongLinkError>) {
        let action = machine.subscriptions.outcome(
            send.id, generation: send.generation, result, now: clock.now, random: .random(in: 0...1))
        switch action {
        case .resolveFirst(let reply):
            waiters.subscriptionSinks[send.id]?.first?.resume(returning: reply)
            waiters.subscriptionSinks[send.id]?.first = nil
        case .failFirst(let error):
            waiters.subscriptionSinks.removeValue(forKey: send.id)?.first?.resume(throwing: error)
        case .replayed(let reply):
            waiters.subscriptionSinks[send.id]?.deliver(.success(reply))
        case .replayFailed(let error, _):
            log(.warning, "replaying \(send.method) failed: \(error)", metadata: ["code": "\(error.code)"])
            waiters.subscriptionSinks[send.id]?.deliver(.failure(error))
            nudgeSubscriptions()
        case .none:
            break
        }
    }

    // MARK: The keeper

    /// The keeper's next work, when there is some; nil once the client stops.
    func nextSubscriptionWork() async -> [SubscriptionWork]? {
        await withCheckedContinuation { continuation in
            waiters.subscriptionKeeper = continuation
            nudgeSubscriptions()
        }
    }

    /// Hands the keeper what is due now, or arms a timer for the next retry.
    func nudgeSubscriptions() {
        guard let keeper = waiters.subscriptionKeeper else { return }
        cancelTimer(.subscriptionRetry)
        if waiters.keeperStopped {
            waiters.subscriptionKeeper = nil
            keeper.resume(returning: nil)
            return
        }
        switch machine.subscriptionsDue(now: clock.now) {
        case .work(let work):
            waiters.subscriptionKeeper = nil
            keeper.resume(returning: work)
        case .retry(let at):
            schedule(.subscriptionRetry, at: at)
        case .nothing:
            break
        }
    }

    func startSubscriptionKeeper() {
        waiters.keeperStopped = false
    }

    /// `run()` ends: the keeper stops, callers waiting for a first reply get why, handles' streams
    /// end and their subscriptions are dropped (the static ones stay).
    func stopSubscriptionKeeper() {
        waiters.keeperStopped = true
        nudgeSubscriptions()
        endRunTimeSubscriptions(stopReason)
    }

    /// The session ends for good (a kick, a rejected login, a logout, a shutdown): the run-time
    /// subscriptions were the last principal's, so none is replayed for the next one; callers
    /// waiting for a first reply get `error`, handles' streams end, leaves not sent yet are
    /// dropped with the link they were for. The static ones stay: they are the app's
    /// configuration, replayed for every principal, with no retry state of the last session.
    func endRunTimeSubscriptions(_ error: LongLinkError) {
        machine.subscriptionLeaves = []
        cancelTimer(.subscriptionRetry)
        machine.subscriptions.endSession()
        let sinks = waiters.subscriptionSinks
        waiters.subscriptionSinks = [:]
        for sink in sinks.values {
            sink.first?.resume(throwing: error)
            sink.finish()
        }
    }
}

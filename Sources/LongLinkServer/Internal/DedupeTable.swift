internal import LongLinkTransport
internal import LongLinkWire

/// What the server keeps of an orphaned execution (see ``OrphanedExecutions``): what stops it.
struct OrphanHandle: Sendable {
    let task: Task<Void, Never>
    /// The request's deadline, armed on `loop`; nil when the request gave none.
    let timer: EventLoopTimer?
    let loop: EventLoop

    func stop() {
        if let timer { loop.cancelTimer(timer) }
        task.cancel()
    }

    func cancelTimer() {
        if let timer { loop.cancelTimer(timer) }
    }
}

/// The server's de-duplication window and its orphaned executions, under one lock so that an
/// execution cannot finish between the check that it runs and its adoption as an orphan.
struct DedupeTable: Sendable {
    var window: DedupeWindow<DedupeWaiter>
    var orphans: OrphanedExecutions<DedupeRun, OrphanHandle>

    /// What became of an execution offered as an orphan.
    enum Adoption {
        /// Kept: it runs on until it finishes or its deadline passes.
        case adopted
        /// Over a bound: stop it now.
        case refused
        /// It finished already: nothing to keep (its timer can go).
        case finished
    }

    mutating func adopt(_ run: DedupeRun, client: String, handle: OrphanHandle) -> Adoption {
        guard window.isRunning(run) else { return .finished }
        return orphans.adopt(run, client: client, handle: handle) ? .adopted : .refused
    }

    /// ``DedupeWindow/finish(_:response:at:)``, with what the execution bound its connection to
    /// (the copies bind theirs alike) and the orphan entry of the run if it had one.
    mutating func finish(
        _ run: DedupeRun, response: Frame.Response, at now: Int64
    ) -> (waiters: DedupeWaiters, binding: StoredReply.Binding?, orphan: OrphanHandle?) {
        let binding = window.binding(of: run)
        let waiters = window.finish(run, response: response, at: now)
        return (waiters, binding, orphans.count > 0 ? orphans.remove(run) : nil)
    }

    /// ``DedupeWindow/abandon(_:)``, and the orphan entry of the run if it had one.
    mutating func abandon(_ run: DedupeRun) -> (waiters: DedupeWaiters, orphan: OrphanHandle?) {
        let waiters = window.abandon(run)
        return (waiters, orphans.count > 0 ? orphans.remove(run) : nil)
    }

    /// The deadline of an orphaned execution passed: forgets it (a later copy runs again) and
    /// returns what stops it with the copies that waited for it; nil when it was not an orphan.
    mutating func orphanTimedOut(_ run: DedupeRun) -> (handle: OrphanHandle, waiters: DedupeWaiters)? {
        guard let handle = orphans.remove(run) else { return nil }
        return (handle, window.abandon(run))
    }
}

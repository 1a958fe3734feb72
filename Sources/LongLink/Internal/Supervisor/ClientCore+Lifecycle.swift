internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    // MARK: Connection states

    func setState(_ new: ConnectionState) {
        machine.connectionState = new
        log(
            new.phase == .stopped && new.error != nil ? .error : .info, "\(new)",
            metadata: new.endpoint.map { ["phase": "\(new.phase)", "endpoint": "\($0)"] } ?? ["phase": "\(new.phase)"])
        for observer in waiters.observers.values { observer.offer(new) }
    }

    var currentState: ConnectionState { machine.connectionState }

    func addObserver() -> StateObserver {
        waiters.nextObserverID += 1
        let observer = StateObserver(id: waiters.nextObserverID, initial: machine.connectionState)
        if machine.connectionState.phase == .stopped {
            observer.finish()
        } else {
            waiters.observers[observer.id] = observer
        }
        return observer
    }

    func removeObserver(_ observer: StateObserver) {
        waiters.observers[observer.id] = nil
        observer.finish()
    }

    // MARK: Statistics

    var statistics: ClientStatistics {
        var snapshot = machine.stats
        snapshot.queued = machine.book.queuedCount
        snapshot.inFlight = machine.book.writtenCount
        snapshot.queuedBytes = machine.book.queuedBytes
        snapshot.writeBufferBytes = link?.connection.bufferedWriteBytes ?? 0
        snapshot.staleAcksDropped = machine.ledger.staleAcksDropped
        return snapshot
    }

    var pendingCount: Int { machine.book.count }

    // MARK: Shutdown and terminal errors

    /// Graceful: refuse new requests, fail queued ones, let written ones finish within the grace
    /// period, then say GoAway and close. Called again while shutting down (the task running
    /// `run()` was cancelled during a graceful shutdown), a grace period that ends sooner moves the
    /// end forward; one that ends later changes nothing.
    func beginShutdown(gracePeriod: Duration) {
        run(machine.shutdown(until: clock.now.advanced(by: max(.zero, gracePeriod))))
    }

    func completeShutdown() {
        run(machine.completeShutdown())
    }

    /// Ends the session with a terminal error: every waiting caller gets it, and nothing of the
    /// session is left for the next one (``clearSession(_:)``).
    func terminate(_ error: LongLinkError) {
        guard machine.links.terminate(error) else { return }
        clearSession(error)
        if let link = liveLink { close(link, .graceful, error: error) }
        closeSideLinks()
    }

    /// Called when `run()` ends: nothing may wait any more.
    func stopped(_ final: ConnectionState) {
        setState(final)
        for observer in waiters.observers.values { observer.finish() }
        waiters.observers.removeAll()
        finishConsumers(stopReason)
        fail(machine.removeAllRequests(), with: stopReason)
    }

    /// Why the client stops or stopped: its terminal error, else a shutdown.
    var stopReason: LongLinkError { machine.stopReason }

    var isStopping: Bool { machine.isStopping }
    var terminal: LongLinkError? { machine.terminalError }
}

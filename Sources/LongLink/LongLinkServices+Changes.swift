extension LongLinkServices {
    /// Adds a service (a third-party SDK arriving with its own servers, say) and returns its client.
    ///
    /// While ``run()`` runs, the new client starts at once; before, it starts with the others. The
    /// services already there are not touched. Throws
    /// ``LongLinkError/Code-swift.struct/alreadyExists`` when a service has that name (a removed
    /// name is free at once), ``LongLinkError/Code-swift.struct/invalidConfiguration`` when the
    /// configuration is not valid, and ``LongLinkError/Code-swift.struct/shutdown`` after
    /// ``shutdown(gracePeriod:)`` or once ``run()`` has been cancelled.
    @discardableResult
    public func add(_ name: ServiceName, configuration: ClientConfiguration) throws(LongLinkError) -> LongLinkClient {
        try configuration.validate()
        let client = LongLinkClient(configuration: configuration)
        if try table.withLock({ table throws(LongLinkError) in try table.add(name, client) }) { ring.yield() }
        return client
    }

    /// Removes a service, draining it within its ``ClientConfiguration/shutdownGracePeriod``; see
    /// ``remove(_:gracePeriod:)``.
    @discardableResult
    public func remove(_ name: ServiceName) async throws(LongLinkError) -> LongLinkClient {
        try await take(name, gracePeriod: nil)
    }

    /// Removes a service and shuts its client down gracefully; returns that client once it has
    /// stopped (its ``LongLinkClient/statistics`` are final).
    ///
    /// The name is free at once: ``client(_:)`` throws `notFound` for it, and ``add(_:configuration:)``
    /// may use it again. The removed client drains: requests already written get `gracePeriod` to
    /// be answered, then fail; queued ones (never written) and new ones, from callers still holding
    /// the client, fail at once with ``LongLinkError/Code-swift.struct/shutdown``. Its push streams
    /// and state stream end. The other services are not touched. Throws `notFound` when no service
    /// has that name.
    ///
    /// Cancelling the calling task fails the removed client's in-flight requests at once (a
    /// grace period of zero) and returns without waiting for the client to stop.
    ///
    /// Before ``run()`` the client has never run: it is shut down, and its state stream ends only
    /// if it is run.
    @discardableResult
    public func remove(_ name: ServiceName, gracePeriod: Duration) async throws(LongLinkError) -> LongLinkClient {
        try await take(name, gracePeriod: gracePeriod)
    }

    private func take(_ name: ServiceName, gracePeriod: Duration?) async throws(LongLinkError) -> LongLinkClient {
        let action = try table.withLock { table throws(LongLinkError) in try table.remove(name) }
        switch action {
        case .shutDown(let client):
            client.shutdown(gracePeriod: gracePeriod ?? client.configuration.shutdownGracePeriod)
            return client
        case .shutDownAndWait(let client, let id):
            client.shutdown(gracePeriod: gracePeriod ?? client.configuration.shutdownGracePeriod)
            let table = self.table
            let waiterID = table.withLock { $0.makeWaiterID() }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    if !table.withLock({ $0.wait(for: id, waiter: waiterID, waiter) }) { waiter.resume() }
                }
            } onCancel: {
                client.shutdown(gracePeriod: .zero)
                table.withLock { $0.cancelWait(for: id, waiter: waiterID) }?.resume()
            }
            return client
        }
    }
}

/// Exclusive logins in a fleet that hold when a notice is lost: besides its notice, an exclusive
/// login leaves a record in the shared store (the principal's client, for a while), and servers
/// read the records of the principals they hold, so that a session that missed the notice still
/// ends.
extension ServerCore {
    /// How often a fleet server reads the session records of every principal it holds: the bound
    /// on how long an older session outlives an exclusive login whose notice was lost.
    static let sessionCheckInterval = Duration.seconds(1)

    /// Reads the session records of `principals` and ends their sessions of other clients than the
    /// recorded one that were bound before its login. The login happened at least `age` before the
    /// read began, so sessions bound before that instant certainly came first; one bound around
    /// the login's time is kept. A store that cannot be reached is counted and tried again at the
    /// next check.
    /// Returns false once the store is shut down.
    @discardableResult
    func checkSessionRecords(of principals: [String]) async -> Bool {
        guard !principals.isEmpty else { return true }
        let asked = ContinuousClock.now
        do throws(LongLinkError) {
            for record in try await pushes.sessionRecords(of: principals) {
                let loggedIn = asked - record.age
                for connection in connections(of: record.principal) {
                    connection.endSession(of: record.principal, unlessClient: record.clientID, boundBefore: loggedIn)
                }
            }
        } catch {
            guard error.code != .shutdown else { return false }
            counters.sharedStoreFailures.increment()
        }
        return true
    }

    /// Checks every principal held here each ``sessionCheckInterval`` until the server shuts down.
    /// Only where notices may be lost: a store in this process loses none, and keeps no records.
    func startSessionChecks() {
        guard immediatePushes == nil else { return }
        Task { [weak self] in
            while true {
                do {
                    try await Task.sleep(for: Self.sessionCheckInterval)
                } catch {
                    return
                }
                guard let self, !isShuttingDown, await checkSessionRecords(of: heldPrincipals()) else { return }
            }
        }
    }
}

internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire

/// The liveness lease of one ``RedisDedupeStore`` and the claims it holds: set before the first
/// claim, then renewed with every claim still running, every ``ClaimLease/interval``, until
/// ``shutdown()``. A stopped server (crashed or shut down) renews nothing: its lease ends after
/// ``ClaimLease/timeToLive`` and its requests are answered `UNKNOWN` by whoever waits for them.
final class ClaimKeeper: Sendable {
    private struct State {
        /// Entry name → the entry and the claim's term in ms, for the claims this instance runs.
        /// Keyed by bytes, as Redis names keys: two principals' spellings must not share a claim.
        var held: [PrincipalKey: (entry: DedupeEntryKey, term: Int64)] = [:]
        var renewal: Task<Void, Never>?
        var isShutDown = false
        /// The lease's value: the id of the server that owns it (for people reading Redis).
        var serverID = ""
        /// The running value of this instance's claims, `R<owner> <server id>`.
        var running: String
    }

    private let state: Locked<State>
    private let client: any RedisCommandRunner
    let lease: ClaimLease
    /// `<prefix>lease:<owner>`.
    let leaseKey: String

    init(client: any RedisCommandRunner, lease: ClaimLease, leaseKey: String, owner: String) {
        self.client = client
        self.lease = lease
        self.leaseKey = leaseKey
        self.state = Locked(State(running: "R" + owner))
    }

    /// The value every claim of this instance holds while it runs.
    var running: String { state.withLock { $0.running } }

    /// Names the claims after `serverID`, unless a claim was made already (its value must not change).
    func attach(serverID id: String, owner: String) {
        state.withLock { state in
            guard state.renewal == nil, state.held.isEmpty else { return }
            state.serverID = id
            state.running = "R" + owner + " " + id
        }
    }

    /// Sets the lease before this instance's first claim (a waiter that found the claim without
    /// the lease would answer it `UNKNOWN`), and starts renewing it.
    func ensureLease() async throws(LongLinkError) {
        let started = state.withLock { $0.renewal != nil || $0.isShutDown }
        if started { return }
        _ = try await client.run(setLease)
        state.withLock { state in
            guard state.renewal == nil, !state.isShutDown else { return }
            let interval = lease.interval
            state.renewal = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard !Task.isCancelled, let self else { return }
                    await self.renew()
                }
            }
        }
    }

    /// This instance claimed `entry` for `term`.
    func claimed(_ entry: DedupeEntryKey, term: Int64) {
        state.withLock { $0.held[PrincipalKey(entry.name)] = (entry, term) }
    }

    /// This instance finished or gave up `entry`. Returns the claim's term in ms, nil when it held none.
    @discardableResult
    func released(_ entry: DedupeEntryKey) -> Int64? {
        state.withLock { $0.held.removeValue(forKey: PrincipalKey(entry.name))?.term }
    }

    /// Whether this instance runs `entry` (claimed, not yet finished or given up).
    func holds(_ entry: DedupeEntryKey) -> Bool {
        state.withLock { $0.held[PrincipalKey(entry.name)] != nil }
    }

    /// Stops renewing; the lease ends on its own, as after a crash.
    func shutdown() {
        let renewal = state.withLock { state in
            state.isShutDown = true
            return state.renewal
        }
        renewal?.cancel()
    }

    private var setLease: RedisCommand {
        let serverID = state.withLock { $0.serverID }
        return RedisCommand(
            "SET", leaseKey, serverID, "PX", String(RedisDedupeStore.milliseconds(lease.timeToLive))
        ).keyed(1..<2)
    }

    /// One renewal: the lease, then every claim held (pipelined). A claim that is no longer this
    /// instance's (marked `UNKNOWN` while the lease had lapsed) is dropped; its `finish` will say so.
    private func renew() async {
        let held = state.withLock { $0.held }
        _ = try? await client.run(setLease)
        let value = Array(running.utf8)
        await withTaskGroup(of: (DedupeEntryKey, Bool).self) { group in
            for (entry, term) in held.values {
                group.addTask { [client] in
                    let reply = try? await client.run(
                        DedupeScripts.renew, keys: [entry.accounts, entry.index, entry.name].map { Array($0.utf8) },
                        arguments: [value, Array(String(term).utf8), Array(entry.member.utf8)])
                    return (entry, reply.map { $0.int64 == 1 } ?? true)
                }
            }
            for await (entry, owned) in group where !owned {
                released(entry)
            }
        }
    }
}

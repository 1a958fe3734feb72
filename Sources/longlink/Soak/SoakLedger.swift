import LongLinkWire

/// The soak's account of its requests, kept as they end: counts, the worst recovery so far, and
/// only the requests still in flight. It holds as much after a day as after a minute (a record per
/// request kept to the end of the run was a few MiB an hour).
///
/// A plain value; the runner keeps it under a lock and reads every time under that lock, so that
/// faults and request ends are recorded in the order of their times.
struct SoakLedger: Sendable {
    /// A request that returns later than this after its start counts as hung.
    let hangAfter: Duration
    /// Requests started from then on must succeed (zero: every request must).
    let recoveryStart: Duration

    /// The requests in flight: number and start time.
    private(set) var inFlight: [Int: Duration] = [:]
    private(set) var sent = 0
    private(set) var succeeded = 0
    private(set) var timedOut = 0
    private(set) var failed = 0
    private(set) var failuresAfterRecovery = 0
    /// Requests answered OK whose handler had not run on the server.
    private(set) var succeededWithoutRunning = 0
    private(set) var faults = 0
    /// Redis Cluster primaries killed (and taken over by their replicas).
    private(set) var primariesKilled = 0
    /// The requests caught by those failovers.
    private(set) var failovers = SoakFailovers()
    /// The longest time from a fault to the next successful request.
    private(set) var worstRecovery: Duration = .zero
    /// Requests that returned later than ``hangAfter``.
    private var late = 0
    /// The earliest fault since the last success: it has the longest wait for the next one.
    private var earliestUnrecoveredFault: Duration?

    init(hangAfter: Duration, recoveryStart: Duration) {
        self.hangAfter = hangAfter
        self.recoveryStart = recoveryStart
    }

    /// Requests that returned too late, or have not returned.
    var hung: Int { late + inFlight.count }

    /// Request `number` started at `time`.
    mutating func started(_ number: Int, at time: Duration) {
        sent += 1
        inFlight[number] = time
    }

    /// Request `number` ended at `time` after `elapsed`, with `error` (nil: OK); the server has run
    /// its handler `runs` times so far. An unknown number is ignored.
    mutating func finished(_ number: Int, at time: Duration, elapsed: Duration, error: LongLinkError?, runs: Int) {
        guard let startedAt = inFlight.removeValue(forKey: number) else { return }
        if elapsed > hangAfter { late += 1 }
        failovers.requestEnded(startedAt: startedAt, at: time, ok: error == nil)
        guard let error else {
            succeeded += 1
            if runs == 0 { succeededWithoutRunning += 1 }
            if let fault = earliestUnrecoveredFault, fault < time {
                worstRecovery = max(worstRecovery, time - fault)
                earliestUnrecoveredFault = nil
            }
            return
        }
        if error.code == .deadlineExceeded { timedOut += 1 } else { failed += 1 }
        if startedAt >= recoveryStart { failuresAfterRecovery += 1 }
    }

    /// A fault was injected at `time`.
    mutating func faultInjected(at time: Duration) {
        faults += 1
        if earliestUnrecoveredFault == nil { earliestUnrecoveredFault = time }
    }

    /// A Redis Cluster primary is being killed at `time` (recorded as a fault too).
    mutating func primaryKilling(at time: Duration) {
        failovers.started(at: time)
    }

    /// The primary killed at `time` was replaced by its replica `took` later; nil: the failover
    /// failed (it ended at `now`, and is not counted as a kill).
    mutating func primaryKilled(at time: Duration, took: Duration?, now: Duration) {
        if took != nil { primariesKilled += 1 }
        failovers.ended(at: took.map { time + $0 } ?? now)
    }
}

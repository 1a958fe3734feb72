import Foundation

/// What a soak run observed. ``passed`` is false when anything hung, was lost, duplicated,
/// reordered, executed twice, or left behind.
struct SoakReport: Sendable, CustomStringConvertible {
    /// Requests made.
    var requestsSent = 0
    /// Requests answered OK.
    var requestsSucceeded = 0
    /// Requests that failed with deadline exceeded.
    var requestsTimedOut = 0
    /// Requests that failed otherwise (connection lost with an unknown outcome, unavailable).
    var requestsFailed = 0
    /// Requests that returned later than their deadline plus the slack, or never.
    var requestsHung = 0
    /// Requests answered OK whose handler ran more than once on the server.
    var requestsExecutedTwice = 0
    /// Requests started after the faults ended (plus one backoff cap) that did not succeed.
    var failuresAfterRecovery = 0
    /// Reliable pushes the server emitted.
    var pushesEmitted = 0
    /// Reliable pushes the consumer received (distinct).
    var pushesDelivered = 0
    /// Emitted pushes never delivered.
    var pushesLost = 0
    /// Pushes delivered more than once.
    var pushesDuplicated = 0
    /// Pushes delivered out of seq order.
    var pushesOutOfOrder = 0
    /// Pushes delivered again in the session after a kick for good: the app took them in the
    /// kicked session, whose acknowledgement ended with it, so the server kept them for the
    /// principal (at least once across sessions; not a duplicate within one).
    var pushesRedeliveredAfterKick = 0
    /// Times the app logged in again after a kick for good.
    var relogins = 0
    /// What the server saw of the credentials; nil without ``SoakConfiguration/credentialLifetime``.
    var credentials: Credentials?

    /// Logins and refreshes on the server, and logins with an expired credential (must be none).
    struct Credentials: Sendable {
        var logins: Int
        var refreshes: Int
        var staleLogins: Int
    }
    /// Faults injected (network faults, restarts, GoAways).
    var faultsInjected = 0
    /// Redis Cluster primaries killed; nil when the run was not on a cluster.
    var primariesKilled: Int?
    /// Requests in flight while a primary failed over (from its kill until its replica served),
    /// and how many of them were answered OK.
    var requestsAcrossFailovers = 0
    /// Of ``requestsAcrossFailovers``, answered OK: their store calls waited for the new primary.
    var requestsAnsweredAcrossFailovers = 0
    /// Links the client re-established.
    var reconnects = 0
    /// The longest time from a fault to the next successful request.
    var worstRecovery: Duration = .zero
    /// Requests still pending or queued in the client at the end.
    var leftPending = 0
    /// Resident memory at the start and the end of the run, in bytes.
    var residentBytesAtStart = 0
    /// Resident memory at the end of the run, in bytes.
    var residentBytesAtEnd = 0
    /// The memory growth allowed.
    var memoryGrowthLimit = 0
    /// The baseline sample (``SoakConfiguration/memoryBaselineTime``); nil when the run ended first.
    var memoryAtBaseline: SoakMemorySample?
    /// The sample taken when the load ended, before the client and the servers shut down.
    var memoryAtEnd: SoakMemorySample?
    /// How much resident memory may grow from the baseline sample to the end one.
    var memoryGrowthAfterBaselineLimit = Int.max
    /// How long the run took.
    var elapsed: Duration = .zero

    /// Creates an empty report.
    init() {}

    /// Whether resident memory stayed within the limit.
    var memoryWithinLimit: Bool { residentBytesAtEnd - residentBytesAtStart <= memoryGrowthLimit }

    /// Resident memory's growth from the baseline sample to the end one (0 without both).
    var memoryGrowthAfterBaseline: Int {
        guard let memoryAtBaseline, let memoryAtEnd else { return 0 }
        return memoryAtEnd.residentBytes - memoryAtBaseline.residentBytes
    }

    /// Whether resident memory levelled off: from the baseline sample to the end it grew by at most
    /// ``memoryGrowthAfterBaselineLimit``.
    var memoryPlateaued: Bool { memoryGrowthAfterBaseline <= memoryGrowthAfterBaselineLimit }

    /// True when nothing hung, was lost, duplicated, reordered, executed twice or left pending, every request
    /// after the faults succeeded, and memory stayed within its bounds.
    var passed: Bool {
        requestsHung == 0 && requestsExecutedTwice == 0 && failuresAfterRecovery == 0 && pushesLost == 0
            && pushesDuplicated == 0 && pushesOutOfOrder == 0 && leftPending == 0 && memoryWithinLimit
            && (credentials?.staleLogins ?? 0) == 0
            && memoryPlateaued
    }

    /// The summary table.
    var description: String {
        let mib = SoakMemorySample.mebibytes
        var rows: [(String, String)] = [
            ("elapsed", "\(elapsed)"),
            ("requests sent", "\(requestsSent)"),
            ("  ok", "\(requestsSucceeded)"),
            ("  timed out", "\(requestsTimedOut)"),
            ("  failed (connection)", "\(requestsFailed)"),
            ("  hung", "\(requestsHung)"),
            ("  executed twice", "\(requestsExecutedTwice)"),
            ("  failed after recovery", "\(failuresAfterRecovery)"),
            ("pushes emitted", "\(pushesEmitted)"),
            ("  delivered", "\(pushesDelivered)"),
            ("  lost", "\(pushesLost)"),
            ("  duplicated", "\(pushesDuplicated)"),
            ("  out of order", "\(pushesOutOfOrder)"),
            ("  delivered again after a kick", "\(pushesRedeliveredAfterKick)"),
            ("faults injected", "\(faultsInjected)"),
        ]
        if let credentials {
            rows += [
                ("logins", "\(credentials.logins) (again after a kick: \(relogins))"),
                ("  with an expired credential", "\(credentials.staleLogins)"),
                ("credential refreshes", "\(credentials.refreshes)"),
            ]
        }
        if let primariesKilled {
            rows += [
                ("  primaries killed", "\(primariesKilled)"),
                ("  requests across failovers", "\(requestsAcrossFailovers)"),
                ("    answered after the failover", "\(requestsAnsweredAcrossFailovers)"),
                ("    failed", "\(requestsAcrossFailovers - requestsAnsweredAcrossFailovers)"),
            ]
        }
        rows += [
            ("reconnects", "\(reconnects)"),
            ("worst recovery", "\(worstRecovery)"),
            ("left pending", "\(leftPending)"),
            ("memory", "\(mib(residentBytesAtStart)) -> \(mib(residentBytesAtEnd)) (limit +\(mib(memoryGrowthLimit)))"),
        ]
        if let memoryAtBaseline {
            rows.append(("memory at \(memoryAtBaseline.elapsedText)", "\(memoryAtBaseline)"))
        }
        if let memoryAtEnd {
            rows.append(("memory at end (\(memoryAtEnd.elapsedText))", "\(memoryAtEnd)"))
        }
        if memoryAtBaseline != nil, memoryAtEnd != nil {
            let growth = memoryGrowthAfterBaseline
            let sign = growth < 0 ? "-" : "+"
            rows.append(
                ("memory growth", "\(sign)\(mib(abs(growth))) RSS (limit +\(mib(memoryGrowthAfterBaselineLimit)))"))
        }
        rows.append(("result", passed ? "PASS" : "FAIL"))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
            .joined(separator: "\n")
    }
}

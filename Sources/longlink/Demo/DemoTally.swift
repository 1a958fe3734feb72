import LongLink
import LongLinkCLISupport
import LongLinkServer

/// The demo's running counts, for the live tally and the summary.
struct DemoTally: Sendable {
    var requestsOK = 0
    var requestsTimedOut = 0
    var requestsFailed = 0
    var quotes = 0
    /// The seqs of the alerts the servers stored, whichever server stored them.
    var alertsEmitted: Set<UInt64> = []
    /// Every alert the client delivered, by seq, duplicates included.
    var alertDeliveries: [UInt64] = []
    var faults = 0

    var alertsDelivered: Int { Set(alertDeliveries).count }
    var duplicates: Int { alertDeliveries.count - Set(alertDeliveries).count }
    /// Alerts stored and never delivered.
    var lost: Int { alertsEmitted.subtracting(alertDeliveries).count }

    /// The tally line printed every two seconds.
    var line: String {
        "requests ok \(requestsOK) / timed out \(requestsTimedOut) / failed \(requestsFailed)"
            + "   quotes \(quotes)   alerts \(alertsDelivered)/\(alertsEmitted.count)"
            + "   duplicates \(duplicates)   lost \(lost)"
    }
}

/// Something the demo does to the network or the servers, once, after `gap`.
struct DemoFault: Sendable {
    /// The wait since the previous fault.
    var gap: Duration
    /// What is about to happen, for the live output; read just before `action` runs.
    var text: @Sendable () -> String
    /// The fault (and its undoing, for those held a while).
    var action: @Sendable () async -> Void

    init(_ gap: Duration, _ text: String, _ action: @escaping @Sendable () async -> Void) {
        self.init(gap, { text }, action)
    }

    init(_ gap: Duration, _ text: @escaping @Sendable () -> String, _ action: @escaping @Sendable () async -> Void) {
        self.gap = gap
        self.text = text
        self.action = action
    }
}

/// The server side of a demo run: one embedded server, or a fleet on Redis.
protocol DemoBackend: Sendable {
    /// Where the client connects (fault proxies).
    var endpoints: [Endpoint] { get }
    /// What runs where, printed at the start.
    var banner: String { get }
    /// Steps the market feed once through a running server; nil while none runs.
    func feedStep() async -> DemoFeed.StepReport?
    /// The faults, in order.
    func faults() -> [DemoFault]
    /// Rows the summary adds after the client's, and whether they hold a failure.
    func summaryRows() -> (rows: [[String]], failed: Bool)
    /// Stops proxies and servers (and what else the backend started).
    func stop() async
}

extension DemoTally {
    /// The summary table: the tally, the client's counters and the backend's rows.
    func summary(statistics: ClientStatistics, backendRows: [[String]]) -> [[String]] {
        [
            ["requests ok", "\(requestsOK)"],
            ["requests timed out", "\(requestsTimedOut)"],
            ["requests failed", "\(requestsFailed)"],
            ["quotes received (best effort)", "\(quotes)"],
            ["alerts emitted (reliable)", "\(alertsEmitted.count)"],
            ["alerts delivered", "\(alertsDelivered)"],
            ["duplicates", "\(duplicates)"],
            ["lost", "\(lost)"],
        ] + backendRows + [
            ["faults injected", "\(faults)"],
            ["reconnects", "\(statistics.reconnects)"],
            ["requests resent after reconnect", "\(statistics.resends)"],
        ]
    }
}

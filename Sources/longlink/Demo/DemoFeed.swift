import Foundation
import LongLinkCLISupport
import LongLinkServer
import Synchronization

/// The demo server's market feed: every ``Configuration/interval`` it sends each logged-in
/// principal a best-effort `quotes` push per symbol on its watch list, and a reliable `alerts`
/// push when a symbol's price crosses a multiple of ``Configuration/alertStepCents``.
///
/// Prices come from a ``QuoteWalk``: with a fixed seed the sequence of prices per symbol is the
/// same in every run (the `time` field is the wall clock, and alert ids count alerts in the order
/// they fire).
final class DemoFeed: Sendable {
    struct Configuration: Sendable {
        /// How often prices move and quotes go out.
        var interval: Duration = .milliseconds(100)
        /// The walk's seed; nil picks a random one.
        var seed: UInt64? = nil
        /// The largest move per step, in basis points of the price (20 = 0.2 %).
        var volatilityBasisPoints: Int = 20
        /// Crossing a multiple of this many cents sends an alert; nil sends none.
        var alertStepCents: Int? = 100

        init() {}
    }

    /// What one step sent.
    struct StepReport: Sendable, Hashable {
        var quotes = 0
        var alerts = 0
        /// Alerts a principal's full push store refused (or, in a fleet, an unreachable shared store).
        var alertsRefused = 0
        /// The seqs of the alerts stored, in the order they were published.
        var alertSeqs: [UInt64] = []
    }

    private struct State {
        var walk: QuoteWalk
        var nextAlertID: UInt64 = 1
    }

    let configuration: Configuration
    private let service: DemoService
    private let state: Mutex<State>
    private let log: @Sendable (String) -> Void

    init(
        service: DemoService, configuration: Configuration = .init(),
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.service = service
        self.configuration = configuration
        self.log = log
        let walk = QuoteWalk(
            seed: configuration.seed ?? UInt64.random(in: 0...UInt64.max),
            volatilityBasisPoints: configuration.volatilityBasisPoints, alertStepCents: configuration.alertStepCents)
        self.state = Mutex(State(walk: walk))
    }

    /// Steps every interval until the task is cancelled. Steps are scheduled on a fixed grid, so a
    /// slow step does not make the feed drift; steps missed entirely are skipped.
    func run(server: LongLinkServer) async {
        let clock = ContinuousClock()
        var next = clock.now
        var refusedSinceLastLog = 0
        while !Task.isCancelled {
            next = next.advanced(by: configuration.interval)
            do {
                try await Task.sleep(until: next, clock: clock)
            } catch {
                return
            }
            let report = await step(server: server)
            refusedSinceLastLog += report.alertsRefused
            if refusedSinceLastLog > 0, report.alertsRefused == 0 {
                log("feed: \(refusedSinceLastLog) alerts refused by full push stores")
                refusedSinceLastLog = 0
            }
            let now = clock.now
            if now > next.advanced(by: configuration.interval) {
                next = now
            }
        }
    }

    /// One step: moves every watched symbol and sends quotes and alerts to the watchers. Alerts go
    /// through ``LongLinkServer/push(to:topic:payload:)``, so that a server of a fleet stores
    /// them in the shared store (a round trip each; alerts are rare). Quotes are best effort and
    /// reach only the connections of the server that sends them: in a fleet, pass every server
    /// as `quoteServers`.
    @discardableResult
    func step(server: LongLinkServer, quoteServers: [LongLinkServer]? = nil) async -> StepReport {
        let quoteServers = quoteServers ?? [server]
        let watchers = service.watchLists()
        let symbols = Set(watchers.flatMap(\.symbols))
        let time = Int64(Date().timeIntervalSince1970 * 1_000)
        let (ticks, alertIDs) = state.withLock { state -> ([String: QuoteWalk.Tick], [String: UInt64]) in
            state.walk.retain(only: symbols)
            var ticks: [String: QuoteWalk.Tick] = [:]
            var alertIDs: [String: UInt64] = [:]
            for tick in state.walk.step(symbols.sorted()) {
                ticks[tick.symbol] = tick
                if tick.crossedThreshold {
                    alertIDs[tick.symbol] = state.nextAlertID
                    state.nextAlertID += 1
                }
            }
            return (ticks, alertIDs)
        }
        var quotePayloads: [String: [UInt8]] = [:]
        for (symbol, tick) in ticks {
            quotePayloads[symbol] = Self.quoteJSON(symbol: symbol, cents: tick.cents, time: time)
        }
        var report = StepReport()
        for (principal, watched) in watchers {
            for symbol in watched {
                guard let payload = quotePayloads[symbol] else { continue }
                for quoteServer in quoteServers {
                    quoteServer.pushBestEffort(to: principal, topic: "quotes", payload: payload)
                }
                report.quotes += 1
                if let id = alertIDs[symbol], let tick = ticks[symbol] {
                    let alert = Self.alertJSON(symbol: symbol, cents: tick.cents, id: id)
                    do {
                        let seq = try await server.push(to: principal, topic: "alerts", payload: alert)
                        report.alerts += 1
                        report.alertSeqs.append(seq)
                    } catch {
                        report.alertsRefused += 1
                    }
                }
            }
        }
        return report
    }

    /// `{"symbol":"AAPL","price":101.25,"time":1700000000000}`
    static func quoteJSON(symbol: String, cents: Int, time: Int64) -> [UInt8] {
        Array(
            "{\"symbol\":\(JSONObject.quoted(symbol)),\"price\":\(QuoteWalk.format(cents: cents)),\"time\":\(time)}"
                .utf8)
    }

    /// `{"symbol":"AAPL","price":105.00,"id":7}`
    static func alertJSON(symbol: String, cents: Int, id: UInt64) -> [UInt8] {
        Array("{\"symbol\":\(JSONObject.quoted(symbol)),\"price\":\(QuoteWalk.format(cents: cents)),\"id\":\(id)}".utf8)
    }
}

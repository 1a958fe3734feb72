// QuoteFeedServer: the backend the QuoteAlerts example talks to, built on LongLinkServer. It
// logs users in, keeps each user's watch list, sends best-effort quotes and reliable price
// alerts, keeps alerts and the de-duplication window in a durable store (they survive a restart),
// limits each user's request rate, tracks who is connected, and serves Prometheus metrics.
//
//   swift run QuoteFeedServer --port 7000 --data-dir /tmp/quotes --metrics 9464   (this folder)
//   swift run QuoteFeedServer --port 7001 --redis redis://127.0.0.1:6379          (a fleet: one per port)
//   swift run QuoteAlerts --user alice AAPL MSFT                                  (Examples/QuoteAlerts)
import Foundation
import LongLinkRedis
import LongLinkServer
import QuoteContract

// The messages, methods and topics are QuoteContract's, shared with the app: this file names no
// method or topic as a string, and encodes nothing by hand.

// MARK: - State

/// Who watches what, and the prices. One actor: the feed and the handlers meet here.
actor Market {
    private var watchLists: [String: Set<String>] = [:]
    private var prices: [String: Double] = [:]
    private var nextAlertID: UInt64 = 0
    /// Alerts fire when a price crosses a multiple of this.
    let alertStep = 1.0

    /// Sets `user`'s watch list (at most 20 symbols of at most 8 characters: client input is bounded).
    func watch(_ symbols: [String], for user: String) throws -> [String] {
        guard symbols.count <= 20, symbols.allSatisfy({ (1...8).contains($0.utf8.count) }) else {
            throw LongLinkError(code: .invalidArgument, message: "at most 20 symbols of 1 to 8 characters")
        }
        watchLists[user] = Set(symbols)
        return symbols.sorted()
    }

    /// Forgets `user` (its last session ended).
    func forget(_ user: String) {
        watchLists[user] = nil
    }

    /// Moves every watched price one step; returns the quotes and the alerts, by user.
    func step() -> (quotes: [(String, Quote)], alerts: [(String, Alert)]) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var moved: [String: (Double, Bool)] = [:]
        for symbol in Set(watchLists.values.joined()) {
            let before = prices[symbol] ?? Double(50 + abs(symbol.hashValue % 150))
            let after = max(1, (before * (1 + Double.random(in: -0.002...0.002)) * 100).rounded() / 100)
            prices[symbol] = after
            moved[symbol] = (after, (before / alertStep).rounded(.down) != (after / alertStep).rounded(.down))
        }
        var quotes: [(String, Quote)] = []
        var alerts: [(String, Alert)] = []
        for (user, symbols) in watchLists {
            for symbol in symbols.sorted() {
                guard let (price, crossed) = moved[symbol] else { continue }
                quotes.append((user, Quote(symbol: symbol, price: price, time: now)))
                if crossed {
                    nextAlertID += 1
                    alerts.append((user, Alert(id: nextAlertID, symbol: symbol, price: price)))
                }
            }
        }
        return (quotes, alerts)
    }
}

// MARK: - Middleware

/// Every call but `Login` needs a logged-in user.
struct RequireLogin: ServerInterceptor {
    func intercept(
        _ payload: [UInt8], context: RequestContext,
        next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
    ) async throws -> [UInt8] {
        guard context.principal != nil || context.method == Login.method else {
            throw LongLinkError(code: .unauthenticated, message: "log in first")
        }
        return try await next(payload, context)
    }
}

/// One line per call, with its request id, principal, status and time.
struct AccessLog: ServerInterceptor {
    func intercept(
        _ payload: [UInt8], context: RequestContext,
        next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
    ) async throws -> [UInt8] {
        let start = ContinuousClock.now
        func log(_ status: String) {
            say("\(context.requestID) \(context.method) \(context.principal ?? "-") \(status) \(ContinuousClock.now - start)")
        }
        do {
            let reply = try await next(payload, context)
            log("OK")
            return reply
        } catch let error as LongLinkError {
            log("\(error.code.status)")
            throw error
        }
    }
}

// MARK: - The program

@main
struct QuoteFeedServer {
    static func main() async throws {
        var port = 7000
        var dataDirectory: String?
        var metricsPort: Int?
        var redisURL: String?
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--port": port = Int(arguments.popFirst() ?? "") ?? port
            case "--data-dir": dataDirectory = arguments.popFirst()
            case "--metrics": metricsPort = Int(arguments.popFirst() ?? "")
            case "--redis": redisURL = arguments.popFirst()
            default:
                say("usage: QuoteFeedServer [--port N] [--data-dir PATH | --redis URL] [--metrics PORT]")
                exit(2)
            }
        }

        let market = Market()
        let metrics = try PrometheusMetrics()
        var configuration = ServerConfiguration()
        configuration.endpoint = .tcp(host: "127.0.0.1", port: port)
        configuration.metrics = metrics

        var router = Router()
        router.register(Login.self) { login, context in
            guard (1...64).contains(login.user.utf8.count) else {
                throw LongLinkError(code: .invalidArgument, message: "a user name has 1 to 64 bytes")
            }
            context.bind(principal: login.user)
            return LoggedIn(user: login.user)
        }
        router.register(WatchSymbols.self) { request, context in
            WatchList(symbols: try await market.watch(request.symbols, for: context.principal!))
        }
        router.interceptors = [AccessLog(), RequireLogin(), try RateLimitInterceptor(rate: 20, burst: 40)]

        let server: LongLinkServer
        if let redisURL {
            // A fleet: alerts, the de-duplication window and presence shared by every server on this Redis.
            let stores = try ServerStores.redis(try RedisConfiguration(url: redisURL))
            server = LongLinkServer(configuration: configuration, router: router, stores: stores)
        } else if let dataDirectory {
            let stores = try ServerStores.durable(
                directory: dataDirectory, configuration: DurableStoreConfiguration(budgetsOf: configuration))
            server = LongLinkServer(configuration: configuration, router: router, stores: stores)
        } else {
            say("alerts are kept in memory: give --data-dir PATH to keep them across restarts")
            server = LongLinkServer(configuration: configuration, router: router)
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            say("listening on \(try await server.localAddress)")
            var page: MetricsEndpoint?
            if let metricsPort {
                page = try await MetricsEndpoint.start(on: .tcp(host: "127.0.0.1", port: metricsPort)) {
                    server.reportMetrics()
                    return metrics.render()
                }
                say("metrics on http://\(page!.localAddress)/metrics")
            }
            // Presence: a user's watch list goes with its last session, on any server of the fleet
            // (with --redis; else on this one): alerts stored here reach the user wherever it is.
            group.addTask {
                for await event in server.sessionEvents() {
                    guard case .ended(let reason) = event.kind else { continue }
                    say("\(event.principal) (\(event.clientID)) left: \(reason)")
                    let presence = try? await server.presence(of: event.principal)
                    if !(presence?.isConnected ?? server.isConnected(event.principal)) {
                        await market.forget(event.principal)
                    }
                }
            }
            // The feed: ten steps a second.
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(100))
                    let (quotes, alerts) = await market.step()
                    for (user, quote) in quotes {
                        try await server.publish(Quotes.self, quote, to: user)  // best effort: never waits
                    }
                    for (user, alert) in alerts {
                        do {
                            try await server.publish(Alerts.self, alert, to: user)  // stored until taken
                        } catch {
                            say("alert \(alert.id) for \(user) not stored: \(error)")
                        }
                    }
                }
            }
            try await group.next()
            group.cancelAll()
            await page?.close()
        }
    }
}

/// Writes a line to standard output at once (`print` buffers when the output is a file or a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// QuoteAlerts: a trading screen's network layer in one file. It logs in, watches a few symbols,
// shows a ticker of best-effort quotes and prints every price alert, which the server keeps
// until this app has taken it. Restart the server while it runs: the client reconnects, logs in
// again, replays the watch list and fetches the alerts it missed, and this code never notices.
//
//   swift run longlink serve --port 7000            (repository root, another terminal)
//   swift run QuoteAlerts --user alice AAPL MSFT    (this folder)

import Foundation
import LongLink
import QuoteContract

// MARK: - Messages
//
// The requests, topics and messages are QuoteContract's (Examples/QuoteContract), the module this
// app shares with QuoteFeedServer: `Login`, `WatchSymbols` (method `quotes.subscribe`, reply
// `WatchList`), `Quotes` (best-effort `Quote` ticks) and `Alerts` (reliable `Alert`s). They are
// JSON, the client's default codec. With SwiftProtobuf-generated types, write this bridge once in
// a file that imports both modules, then one line per message type, and use them as requests,
// replies and topic messages:
//
//     import SwiftProtobuf
//
//     extension LongLinkBinaryMessage where Self: SwiftProtobuf.Message {
//         init(serializedBytes bytes: [UInt8]) throws { try self.init(serializedBytes: bytes, extensions: nil) }
//         func serializedBytes() throws -> [UInt8] { try serializedBytes(partial: false) }
//     }
//
//     extension Quotes_Candles: LongLinkBinaryMessage {}

// MARK: - The app's API, written once on top of the client

extension LongLinkClient {
    /// Quote ticks, decoded. Each access is a new consumer; iterate it from one task.
    var quotes: some AsyncSequence<Quote, Never> {
        pushes(Quotes.self)
    }

    /// Price alerts, decoded; acknowledged to the server once the loop has taken them.
    var alerts: some AsyncSequence<Alert, Never> {
        pushes(Alerts.self)
    }

    /// Replaces the watch list on the current link and returns it as stored.
    func watch(_ symbols: [String]) async throws -> [String] {
        try await send(WatchSymbols(symbols: symbols)).symbols
    }
}

// MARK: - The program

@main
struct QuoteAlerts {
    static func main() async {
        var endpoint = Endpoint.tcp(host: "127.0.0.1", port: 7000)
        var user = "alice"
        var seconds: Int?
        var symbols: [String] = []
        var arguments = CommandLine.arguments.dropFirst()
        func value<T>(_ parse: (String) -> T?) -> T {
            guard let text = arguments.popFirst(), let value = parse(text) else { usage() }
            return value
        }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--endpoint": endpoint = value(Endpoint.init(parsing:))
            case "--user": user = value { $0 }
            case "--seconds": seconds = value { Int($0) }
            case _ where argument.hasPrefix("-"): usage()
            default: symbols.append(argument)
            }
        }
        if symbols.isEmpty { symbols = ["AAPL", "MSFT", "TSLA"] }

        do {
            try await run(endpoint: endpoint, user: user, symbols: symbols, seconds: seconds)
        } catch {
            print("QuoteAlerts stopped: \(error)")
            exit(1)
        }
    }

    /// Watches `symbols` and prints quotes and alerts until `seconds` pass. `withLongLinkClient`
    /// runs its closure in the caller's isolation (its `isolation:` parameter), so main-actor code
    /// may call it too.
    static func run(endpoint: Endpoint, user: String, symbols: [String], seconds: Int?) async throws {
        let configuration = try makeConfiguration(endpoint: endpoint, user: user, symbols: symbols)
        try await withLongLinkClient(configuration: configuration) { client in
            // An ordinary typed call: it waits for the link and the login, then for its reply.
            let watched = try await client.watch(symbols)
            print("watching \(watched.joined(separator: ", ")) as \(user)")
            await show(client, for: seconds)
        }
    }

    static func makeConfiguration(endpoint: Endpoint, user: String, symbols: [String]) throws -> ClientConfiguration {
        var configuration = ClientConfiguration(endpoints: [endpoint])
        // A stable id lets the server recognise a request the client sends again after a drop.
        configuration.clientID = "quote-alerts-\(user)"
        // Runs after every connect, before any queued request goes out ("login gates the queue").
        // Throwing UNAUTHENTICATED here stops the client for good; other errors retry.
        configuration.login = { session in
            _ = try await session.send(Login(user: user))
        }
        // Replayed after every login: a restarted server knows nothing about this user's list.
        configuration.subscriptions = [try Subscription(WatchSymbols(symbols: symbols), codec: configuration.codec)]
        return configuration
    }

    /// Prints the link's state changes, a ticker line per second and every alert, until
    /// `seconds` pass (or forever; Ctrl-C ends the program).
    static func show(_ client: LongLinkClient, for seconds: Int?) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await state in client.connectionStates { print("link: \(state)") }
            }
            group.addTask {
                // Quotes arrive many times a second: keep the latest price, print once a second.
                var latest: [String: Double] = [:]
                var printed = ContinuousClock.now
                for await quote in client.quotes {
                    latest[quote.symbol] = quote.price
                    guard ContinuousClock.now - printed >= .seconds(1) else { continue }
                    printed = ContinuousClock.now
                    let ticker = latest.sorted { $0.key < $1.key }.map {
                        "\($0.key) \(String(format: "%.2f", $0.value))"
                    }
                    print(ticker.joined(separator: "  "))
                }
            }
            group.addTask {
                for await alert in client.alerts {
                    print("ALERT #\(alert.id): \(alert.symbol) at \(String(format: "%.2f", alert.price))")
                }
            }
            if let seconds {
                try? await Task.sleep(for: .seconds(seconds))
                // Cancelling ends the loops; the client then shuts down gracefully.
                group.cancelAll()
            }
        }
    }

    static func usage() -> Never {
        print("usage: QuoteAlerts [--endpoint HOST:PORT] [--user NAME] [--seconds N] [SYMBOL ...]")
        exit(2)
    }
}

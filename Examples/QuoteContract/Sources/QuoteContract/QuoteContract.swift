// QuoteContract: what QuoteAlerts and QuoteFeedServer say to each other, written once. Each
// request names its method and reply type, each topic its name, message type and delivery; the
// app sends and receives these types (`client.send(WatchSymbols(...))`, `client.pushes(Alerts.self)`)
// and the backend routes and publishes the same ones (`router.register(WatchSymbols.self)`,
// `server.publish(Alerts.self, alert, to: user)`). No method or topic string is written twice.
//
// It imports LongLinkWire, where the contract protocols live, and neither the client nor the
// server: each side imports this module beside its own. The messages are JSON (both sides'
// default codec), in the shapes `longlink serve`'s demo server speaks too, so QuoteAlerts runs
// against either.
public import LongLinkWire

// MARK: - Requests

/// `login`: the user's name as the payload's bytes (a binary message: no JSON around it).
public struct Login: LongLinkRequest, LongLinkBinaryMessage {
    public typealias Reply = LoggedIn
    public static let method = "login"

    public var user: String

    public init(user: String) {
        self.user = user
    }

    public init(serializedBytes bytes: [UInt8]) throws {
        self.user = String(decoding: bytes, as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        Array(user.utf8)
    }
}

/// The reply to `login`.
public struct LoggedIn: Codable, Sendable {
    public var user: String

    public init(user: String) {
        self.user = user
    }
}

/// `quotes.subscribe`: sets the user's watch list.
public struct WatchSymbols: LongLinkRequest, Codable {
    public typealias Reply = WatchList
    public static let method = "quotes.subscribe"

    public var symbols: [String]

    public init(symbols: [String]) {
        self.symbols = symbols
    }

    /// The payload is a bare JSON array (`["AAPL","MSFT"]`), not an object.
    public init(from decoder: any Decoder) throws {
        self.symbols = try decoder.singleValueContainer().decode([String].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(symbols)
    }
}

/// The reply to `quotes.subscribe`: the watch list as the server stored it.
public struct WatchList: Codable, Sendable {
    public var symbols: [String]

    public init(symbols: [String]) {
        self.symbols = symbols
    }
}

// MARK: - Topics

/// Price ticks, best effort (seq 0): under load some are skipped, and the next one replaces them.
public enum Quotes: LongLinkTopic {
    public typealias Message = Quote
    public static let name = "quotes"
    public static let kind = TopicKind.bestEffort
}

/// Price alerts, reliable: the server keeps each one until the app has taken it.
public enum Alerts: LongLinkTopic {
    public typealias Message = Alert
    public static let name = "alerts"
    public static let kind = TopicKind.reliable
}

/// A price tick.
public struct Quote: Codable, Sendable {
    public var symbol: String
    public var price: Double
    /// Milliseconds since 1970.
    public var time: Int64

    public init(symbol: String, price: Double, time: Int64) {
        self.symbol = symbol
        self.price = price
        self.time = time
    }
}

/// A price alert: the price crossed a whole step.
public struct Alert: Codable, Sendable {
    public var id: UInt64
    public var symbol: String
    public var price: Double

    public init(id: UInt64, symbol: String, price: Double) {
        self.id = id
        self.symbol = symbol
        self.price = price
    }
}

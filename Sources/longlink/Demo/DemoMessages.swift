/// The JSON messages of the demo service's methods and pushes.
///
/// Requests and replies go through the router's typed handlers (`JSONPayloadCodec`); quote and
/// alert pushes are written by hand by the feed, which sends thousands of them a second.
enum DemoMessages {
    /// The reply to `login`: `{"user":"alice"}`.
    struct LoginReply: Codable, Sendable, Hashable {
        var user: String
    }

    /// The request of `room.enter`: `{"room":42,"user":"alice"}`.
    struct EnterRoom: Codable, Sendable, Hashable {
        var room: Int
        var user: String
    }

    /// The reply to `room.enter`: the room and its members, sorted.
    struct RoomState: Codable, Sendable, Hashable {
        var room: Int
        var members: [String]
    }

    /// The request of `room.say`: `{"room":42,"text":"hi"}`. The speaker is the connection's
    /// principal; `user` names one when the connection has not logged in.
    struct Say: Codable, Sendable, Hashable {
        var room: Int
        var text: String
        var user: String?
    }

    /// The reply to `room.say`: how many members the message was stored for.
    struct SayReply: Codable, Sendable, Hashable {
        var room: Int
        var delivered: Int
    }

    /// The reliable push on topic `room.<id>`: `{"room":42,"user":"alice","text":"hi"}`.
    struct ChatMessage: Codable, Sendable, Hashable {
        var room: Int
        var user: String
        var text: String
    }

    /// The reply to `quotes.subscribe`: the principal's watch list now, sorted.
    struct WatchList: Codable, Sendable, Hashable {
        var symbols: [String]
    }

    /// The best-effort push on topic `quotes`: `{"symbol":"AAPL","price":101.25,"time":1700000000000}`
    /// (`time` in milliseconds since 1970).
    struct Quote: Codable, Sendable, Hashable {
        var symbol: String
        var price: Double
        var time: Int64
    }

    /// The reliable push on topic `alerts`: `{"symbol":"AAPL","price":105.00,"id":7}`.
    struct Alert: Codable, Sendable, Hashable {
        var symbol: String
        var price: Double
        var id: UInt64
    }
}

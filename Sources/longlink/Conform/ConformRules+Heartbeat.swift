import LongLinkWire

// The heartbeat (Protocol.md, "Changing the heartbeat on a live link"): a Ping proposing an interval
// is answered with the interval in force.
extension ConformRule {
    static let heartbeat: [ConformRule] = [
        ConformRule(
            "heartbeat.live-change",
            "a Ping proposing heartbeat_ms gets a Pong with the interval in force (the proposal when in bounds); a plain Ping's Pong has none"
        ) { context throws(ConformFailure) in
            let link = try context.connect()
            let welcome = try link.handshake(clientID: context.clientID("live-heartbeat"))
            let current = welcome.heartbeatMilliseconds
            guard current > 0 else { throw ConformFailure("Welcome.heartbeat_ms is 0") }
            // The interval the server chose itself lies within its bounds: proposed again, it stands.
            try link.send(.ping(Frame.Ping(nonce: 0x4842, heartbeatMilliseconds: current)))
            let same = try Self.expectPong(on: link, nonce: 0x4842)
            guard same.heartbeatMilliseconds == current else {
                throw ConformFailure(
                    "proposed \(current) (the Welcome's own), Pong.heartbeat_ms is \(same.heartbeatMilliseconds)")
            }
            // 1 ms is below any sane minimum: clamped up, never 0, never above what was in force.
            try link.send(.ping(Frame.Ping(nonce: 0x4843, heartbeatMilliseconds: 1)))
            let low = try Self.expectPong(on: link, nonce: 0x4843)
            guard (1...current).contains(low.heartbeatMilliseconds) else {
                throw ConformFailure("proposed 1, Pong.heartbeat_ms is \(low.heartbeatMilliseconds), not 1...\(current)")
            }
            try link.send(.ping(Frame.Ping(nonce: 0x4844)))
            let plain = try Self.expectPong(on: link, nonce: 0x4844)
            guard plain.heartbeatMilliseconds == 0 else {
                throw ConformFailure("a Ping without heartbeat_ms got Pong.heartbeat_ms \(plain.heartbeatMilliseconds)")
            }
        }
    ]
}

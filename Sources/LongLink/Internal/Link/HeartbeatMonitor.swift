/// Decides, four times per heartbeat interval, whether a link needs a `Ping` or is dead.
///
/// A pure state machine: the core tells it what happened since the last tick and does what it
/// returns. A `Ping` goes out after one interval with nothing received (once per interval) or
/// nothing sent (the server closes links it has heard nothing from for three intervals); the link
/// is dead after two intervals with nothing received, so a half-open link is replaced within
/// 2 to 2.25 intervals.
struct HeartbeatMonitor: Equatable {
    enum TickAction: Equatable {
        case none
        case sendPing
        case declareDead
    }

    static let ticksPerInterval = 4

    private(set) var ticksSinceReceived = 0
    private(set) var ticksSinceSent = 0

    mutating func tick(receivedSinceLastTick: Bool, sentSinceLastTick: Bool) -> TickAction {
        ticksSinceReceived = receivedSinceLastTick ? 0 : ticksSinceReceived + 1
        ticksSinceSent = sentSinceLastTick ? 0 : ticksSinceSent + 1
        if ticksSinceReceived >= 2 * Self.ticksPerInterval { return .declareDead }
        let quietInbound =
            ticksSinceReceived >= Self.ticksPerInterval && ticksSinceReceived % Self.ticksPerInterval == 0
        if quietInbound || ticksSinceSent >= Self.ticksPerInterval { return .sendPing }
        return .none
    }
}

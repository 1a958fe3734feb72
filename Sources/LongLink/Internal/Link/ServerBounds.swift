internal import LongLinkWire

/// Bounds on what a server's `Welcome` and `GoAway` may set, so that a broken or hostile server
/// cannot make the client ping in a loop, stop noticing a dead link, stay away for weeks, or refuse
/// every request. The rules are in Protocol.md ("What a client trusts").
enum ServerBounds {
    /// The shortest heartbeat a server may impose, unless the client proposed a shorter one.
    static let heartbeatFloor = Duration.seconds(1)
    /// The longest heartbeat a server may impose on a client that proposed none (0).
    static let heartbeatCeiling = Duration.seconds(300)
    /// The longest `retry_after_ms` honoured.
    static let retryAfterCeiling = Duration.seconds(300)
    /// The smallest frame limit honoured: below it the client could not even log in.
    static let frameBytesFloor = 1_024

    /// The heartbeat interval for a link: the server's `heartbeat_ms`, or the client's proposal
    /// when the server says 0. The server may shorten the proposal (down to the floor, or to the
    /// proposal when that is shorter) but never lengthen it: the client knows its network (a NAT
    /// that forgets a quiet mapping, a mobile link), and a longer interval would let a server
    /// stretch the time it takes to notice a dead link to minutes. With no proposal, the server's
    /// value within the floor and the ceiling.
    static func heartbeat(offered milliseconds: UInt32, proposed: Duration) -> Duration {
        guard milliseconds > 0 else { return proposed }
        let offered = Duration.milliseconds(Int64(milliseconds))
        guard proposed > .zero else { return min(max(offered, heartbeatFloor), heartbeatCeiling) }
        return min(max(offered, min(proposed, heartbeatFloor)), proposed)
    }

    /// How long to stay away after a `GoAway` asking for `retry_after_ms`.
    static func retryAfter(milliseconds: UInt32) -> Duration {
        min(.milliseconds(Int64(milliseconds)), retryAfterCeiling)
    }

    /// The largest request frame the server accepts (`max_frame_bytes`, 0 = the default 4 MiB).
    static func maxFrameBytes(offered bytes: UInt32) -> Int {
        bytes == 0 ? Frame.defaultMaxFrameBytes : max(Int(bytes), frameBytesFloor)
    }
}

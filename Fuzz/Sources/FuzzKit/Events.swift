/// The events of the client's script (``FuzzInput/byte()`` modulo the count picks one).
public enum ClientEvent: UInt8, CaseIterable {
    /// A new connection is up (only when no link is).
    case connect
    /// A frame from the server: a ``FuzzInput/frame()`` follows.
    case frame
    /// The login step and subscriptions succeeded.
    case loginSucceeded
    /// The app makes a request: flags (idempotent, login) and a payload size follow.
    case request
    /// A pending request's deadline passed, or its caller cancelled: which one follows.
    case giveUp
    /// The transport reports the link closed.
    case linkClosed
    /// A heartbeat tick: whether anything was received, sent.
    case tick
    /// A consumer starts: its topic and buffer size follow.
    case addConsumer
    /// A consumer hands pushes to the app: which consumer, and how many.
    case take
    /// A consumer ends.
    case removeConsumer
    /// The app shuts the client down (begin, then complete on a second one).
    case shutdown
    /// The ack timer fires.
    case ackTimer
    /// A terminal error (an auth rejection).
    case terminate
}

/// The events of the server's script.
public enum ServerEvent: UInt8, CaseIterable {
    /// Bytes from the client: a ``FuzzInput/chunk()`` follows, fed to the frame decoder.
    case bytes
    /// A running handler returns: which request, and its status.
    case handlerFinished
    /// A request's deadline timer fires.
    case handlerTimedOut
    /// The login handler binds the connection to a principal: which one follows.
    case bind
    /// The push pump runs: how many pushes the principal's store holds beyond those sent.
    case pump
    /// The push window's timer fires.
    case pushWindowTimer
    /// A heartbeat tick.
    case heartbeatTick
    /// The partial-frame timer fires: whether reading is paused.
    case partialFrameTimer
    /// The server asks the session to go away.
    case goAway
    /// The drain timeout passes.
    case drainTimeout
    /// The handshake timeout passes.
    case handshakeTimeout
    /// Time passes (for the de-duplication window): milliseconds follow.
    case advanceClock
    /// The socket closes.
    case connectionClosed
}

extension CaseIterable where Self: RawRepresentable, Self.RawValue == UInt8 {
    /// The event a script byte names.
    public static func from(_ byte: UInt8) -> Self {
        // Raw values run from 0 without gaps, so the remainder names a case.
        Self(rawValue: byte % UInt8(allCases.count))!
    }
}

/// Whether a connection's incomplete frame is taking too long to arrive
/// (``ServerConfiguration/partialFrameTimeout``).
///
/// Any byte counts as life for the heartbeat, so without this a client trickling one byte every
/// few minutes would hold a partial frame of up to the frame limit for ever. One timer per
/// connection, armed when a read leaves an incomplete frame and never moved per read (that would
/// cost a timer update on every read of a busy link): when it fires, a frame that completed in the
/// meantime earns the next incomplete one a fresh period, so a frame gets between one and two
/// periods.
struct PartialFrameWatch {
    /// The stream offset of the incomplete frame the timer watches; nil while no timer is armed.
    private(set) var watchedOffset: Int?

    /// A read was decoded: `pendingBytes` are held of an incomplete frame starting at stream
    /// offset `consumed`. Returns true when the timer is to be armed.
    mutating func read(pendingBytes: Int, consumed: Int) -> Bool {
        guard pendingBytes > 0, watchedOffset == nil else { return false }
        watchedOffset = consumed
        return true
    }

    /// What to do when the timer fires.
    enum FiredAction: Equatable {
        /// No incomplete frame is held: the timer is not armed again.
        case none
        /// Progress since the timer was armed, or the server itself stopped reading: arm again.
        case rearm
        /// The same frame is still incomplete: close the connection.
        case close
    }

    /// The timer fired; the decoder now holds `pendingBytes` of a frame starting at `consumed`.
    mutating func fired(pendingBytes: Int, consumed: Int, readingPaused: Bool) -> FiredAction {
        guard let watched = watchedOffset else { return .none }
        watchedOffset = nil
        guard pendingBytes > 0 else { return .none }
        guard readingPaused || consumed != watched else { return .close }
        watchedOffset = consumed
        return .rearm
    }
}

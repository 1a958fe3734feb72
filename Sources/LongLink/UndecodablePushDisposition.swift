/// What becomes of a reliable push that a skipping typed stream (``LongLinkClient/pushes(topic:as:)-4gdwt``,
/// ``LongLinkClient/throwingPushes(topic:as:)-1cjs0``) took but could not decode: the answer of
/// ``ClientConfiguration/undecodablePushDisposition``.
///
/// A push that does not decode now will not decode when sent again to the same app, so by default
/// it is a dead letter: acknowledged (the server forgets it), logged with its topic and seq
/// (never its payload), and counted in ``ClientStatistics/undecodablePushes`` and
/// ``ClientStatistics/deadLetterPushes``. An app that will decode it later (an update that knows
/// a new message type, say) may leave it with the server instead:
///
/// ```swift
/// configuration.undecodablePushDisposition = { push, _ in
///     push.topic.hasPrefix("v2.") ? .leaveUnacknowledged : .acknowledge
/// }
/// ```
///
/// A push left unacknowledged stays the server's: it is sent again after the next `Sync` (a
/// reconnection, a consumer that catches up or arrives), and is decided on again each time, so
/// an app that leaves every push of a topic it cannot decode is sent them again and again. A
/// best-effort push is never acknowledged either way: it is dropped.
public struct UndecodablePushDisposition: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Hashable {
        case acknowledge
        case leaveUnacknowledged
    }

    private let kind: Kind

    private init(_ kind: Kind) {
        self.kind = kind
    }

    /// Acknowledge it without handing it over: a dead letter, which the server forgets (the default).
    public static let acknowledge = UndecodablePushDisposition(.acknowledge)

    /// Leave it unacknowledged with the server, which sends it again after the next `Sync`.
    public static let leaveUnacknowledged = UndecodablePushDisposition(.leaveUnacknowledged)

    /// `acknowledge` or `leaveUnacknowledged`.
    public var description: String {
        switch kind {
        case .acknowledge: "acknowledge"
        case .leaveUnacknowledged: "leaveUnacknowledged"
        }
    }
}

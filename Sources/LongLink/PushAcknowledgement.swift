/// When a push stream acknowledges a reliable push: what the server keeps until then, and sends
/// again to a client that comes back without having acknowledged it.
public struct PushAcknowledgement: Sendable, Hashable, CustomStringConvertible {
    private enum Wrapped: Sendable, Hashable {
        case atHandOver
        case afterProcessing
    }

    private let wrapped: Wrapped

    /// When the stream hands the push to the app (its `next()` returns it): the default of every
    /// push stream. An app that dies while handling it has acknowledged it.
    public static let atHandOver = PushAcknowledgement(wrapped: .atHandOver)

    /// When the app calls ``PushDelivery/ack()`` once it is done with the push. One the app never
    /// acknowledges is the server's again when the stream ends (another consumer of its topic gets
    /// it, or the next one made) or the client stops (the next client logged in as the same user
    /// gets it). At most ``ClientConfiguration/unacknowledgedPushLimit`` reliable pushes wait in the
    /// stream and in the app's hands together; past that, reliable pushes stay with the server
    /// until the app acknowledges some.
    public static let afterProcessing = PushAcknowledgement(wrapped: .afterProcessing)

    /// `atHandOver` or `afterProcessing`.
    public var description: String {
        switch wrapped {
        case .atHandOver: "atHandOver"
        case .afterProcessing: "afterProcessing"
        }
    }
}

/// Why a ``DedupeStore`` refused a request: the `underlying` error of the
/// ``LongLinkError/Code-swift.struct/resourceExhausted`` it throws from ``DedupeStore/begin(_:)``
/// or ``DedupeStore/awaitOutcome(_:)`` when the tenant is over its budget in the store.
///
/// The server answers the request `RESOURCE_EXHAUSTED` with the error's message (which states the
/// hint) and does not run it; nothing is stored for it.
public struct DedupeRefusal: Error, Sendable, Hashable {
    /// When the tenant is expected to have room again (its oldest entry expires); nil when waiting
    /// does not help this request (``ran``).
    public var retryAfter: Duration?
    /// The request ran once already, and its reply was too large for the tenant's budget to keep:
    /// its copies are answered so, never run again, until the window ends.
    public var ran: Bool

    /// A refusal; `retryAfter` is nil when the request ran and its reply was not kept.
    public init(retryAfter: Duration?, ran: Bool = false) {
        self.retryAfter = retryAfter
        self.ran = ran
    }
}

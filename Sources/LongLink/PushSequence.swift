/// Pushes as an `AsyncSequence` that throws why it ended: what
/// ``LongLinkClient/throwingPushes(topic:)`` and ``LongLinkClient/throwingPushes(topic:as:)-1cjs0``
/// return, beside the `AsyncStream` of ``LongLinkClient/pushes(topic:)``.
///
/// It delivers exactly what the `AsyncStream` would (same buffer, same acknowledgements, same
/// policy for a slow consumer); only its end differs. When the client ends it, the loop throws
/// the reason as a ``LongLinkError``:
///
/// - ``LongLinkError/Code-swift.struct/shutdown`` after ``LongLinkClient/shutdown()`` or when the
///   task running ``LongLinkClient/run()`` was cancelled;
/// - ``LongLinkError/Code-swift.struct/unauthenticated`` when the login was rejected;
/// - ``LongLinkError/Code-swift.struct/goAway`` when the server sent `GoAway` without reconnect
///   (kicked: logged in elsewhere, banned), and any other terminal error `run()` throws.
///
/// It ends normally (`nil`) when a task iterating it is cancelled, which ends it for every loop
/// over it, as with `AsyncStream`. After it threw, an iterator returns `nil`.
///
/// ```swift
/// do throws(LongLinkError) {
///     for try await alert in client.throwingPushes(topic: "alerts", as: Alert.self) { show(alert) }
/// } catch where error.code == .goAway {
///     showSignedOut(error.message)
/// }
/// ```
public struct PushSequence<Element: Sendable>: AsyncSequence, Sendable {
    /// Why the client ended the sequence.
    public typealias Failure = LongLinkError

    private let subscription: PushSubscription
    /// Turns a push into an element, or skips it.
    private let step: @Sendable (Push) -> PushStep<Element>

    init(subscription: PushSubscription, step: @escaping @Sendable (Push) -> PushStep<Element>) {
        self.subscription = subscription
        self.step = step
    }

    /// Creates an iterator. Every iterator of one sequence takes from the same consumer: each push
    /// goes to one of them.
    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: subscription, step: step)
    }

    /// Hands over pushes one at a time.
    public struct Iterator: AsyncIteratorProtocol {
        private let subscription: PushSubscription
        private let step: @Sendable (Push) -> PushStep<Element>
        private var ended = false

        init(subscription: PushSubscription, step: @escaping @Sendable (Push) -> PushStep<Element>) {
            self.subscription = subscription
            self.step = step
        }

        /// The next push; `nil` when the sequence ended normally; throws why the client ended it.
        public mutating func next() async throws(LongLinkError) -> Element? {
            try await next(isolation: nil)
        }

        /// The next push, on the caller's actor; `nil` when the sequence ended normally; throws why
        /// the client ended it.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(LongLinkError) -> Element? {
            guard !ended else { return nil }
            let subscription = self.subscription
            let step = self.step
            let element = await withTaskCancellationHandler {
                await subscription.next(step)
            } onCancel: {
                subscription.cancel()
            }
            guard let element else {
                ended = true
                if let reason = subscription.endReason { throw reason }
                return nil
            }
            return element
        }
    }
}

internal import LongLinkWire

/// What one push stream holds: its consumer's buffer, registered with the core for as long as
/// the stream (or an iterator of it) lives.
///
/// `AsyncStream(unfolding:onCancel:)` calls `onCancel` only when a waiting task is cancelled, not
/// when a stream nobody iterated is released; the `deinit` covers that case, so a dropped stream
/// never keeps pushes from being acknowledged or re-sent.
final class PushSubscription: Sendable {
    private let core: ClientCore
    private let subscriber: PushSubscriber

    init(core: ClientCore, topic: String?) {
        self.core = core
        self.subscriber = core.makeSubscriber(topic: topic)
    }

    /// The next push; nil once the stream has ended.
    func next() async -> Push? {
        await subscriber.next()
    }

    /// Why the client ended the stream (see ``PushSubscriber/endReason``).
    var endReason: LongLinkError? {
        subscriber.endReason
    }

    /// A task waiting in the stream was cancelled: the stream ends for every loop over it.
    func cancel() {
        subscriber.cancelWaiters()
        let id = subscriber.id
        core.onLoop { $0.removeSubscriber(id) }
    }

    deinit {
        let id = subscriber.id
        core.onLoop { $0.removeSubscriber(id) }
    }
}

internal import LongLinkWire

/// What one push stream holds: its consumer's buffer, registered with the core for as long as
/// the stream (or an iterator of it) lives.
///
/// `AsyncStream(unfolding:onCancel:)` calls `onCancel` only when a waiting task is cancelled, not
/// when a stream nobody iterated is released; the `deinit` covers that case, so a dropped stream
/// never keeps pushes from being acknowledged or re-sent.
final class PushSubscription: Sendable {
    private let core: ClientCore
    let subscriber: PushSubscriber

    init(
        core: ClientCore, filter: TopicFilter, conflation: PushConflation? = nil,
        acknowledgement: PushAcknowledgement = .atHandOver
    ) {
        self.core = core
        self.subscriber = core.makeSubscriber(filter: filter, conflation: conflation, acknowledgement: acknowledgement)
    }

    convenience init(core: ClientCore, topic: String?, conflation: PushConflation? = nil) {
        self.init(core: core, filter: TopicFilter(topic), conflation: conflation)
    }

    /// The next push; nil once the stream has ended.
    func next() async -> Push? {
        await subscriber.next()
    }

    /// The next element `step` makes of a push; nil once the stream has ended.
    ///
    /// The push counts as taken (and a reliable one is acknowledged) only after `step` decided:
    /// when it is handed over, or skipped after the app saw it; a released one was never taken. A
    /// consumer that acknowledges after processing holds a delivered push until the app's ack.
    func next<Element>(_ step: (Push) -> PushStep<Element>) async -> Element? {
        let holds = subscriber.unacknowledgedLimit != nil
        while let push = await subscriber.next(recording: holds) {
            switch step(push) {
            case .deliver(let element):
                if !holds { subscriber.recordTaken(push) }
                return element
            case .skip:
                if holds { subscriber.acknowledge(push.key) } else { subscriber.recordTaken(push) }
            case .release:
                // A stream that ended meanwhile gave it back already.
                if holds, !subscriber.forget(push.key) { continue }
                core.onLoop { $0.releasePush(push) }
            }
        }
        return nil
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

/// What a typed stream does with a push it took from its consumer's buffer.
enum PushStep<Element> {
    /// Hand this element to the app; the push is taken.
    case deliver(Element)
    /// Hand nothing over, but the app saw the push (through a handler): it is taken.
    case skip
    /// Hand nothing over and leave the push with the server: it was never taken.
    case release
}

/// Server pushes as an `AsyncSequence`: what ``LongLinkClient/pushes(topic:)`` returns.
///
/// The consumer is registered when the sequence is created, so pushes that arrive before the
/// first `next()` wait in its buffer. Reliable pushes are acknowledged after `next()` returned them
/// (batched); a reliable seq is returned at most once per client. When the consumer falls
/// ``ClientConfiguration/pushBufferLimit`` behind, reliable pushes are left unacknowledged with the
/// server and fetched again with `Sync` once it catches up, so none is lost and memory stays
/// bounded; best-effort pushes are dropped instead. The sequence ends when the client stops, or
/// when the task waiting in `next()` is cancelled.
public struct PushSequence: AsyncSequence, Sendable {
    /// Each element is one push.
    public typealias Element = Push
    /// The sequence never throws.
    public typealias Failure = Never

    private let registration: Registration

    init(core: ClientCore, topic: String?) {
        registration = Registration(core: core, topic: topic)
    }

    /// Creates the iterator. Iterate from one task at a time.
    public func makeAsyncIterator() -> Iterator {
        Iterator(registration: registration)
    }

    /// Returns pushes one at a time.
    public struct Iterator: AsyncIteratorProtocol {
        let registration: Registration

        /// The next push, or nil when the sequence has ended.
        public mutating func next() async -> Push? {
            await registration.subscriber().next()
        }

        /// The next push, or nil when the sequence has ended.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Push? {
            await registration.subscriber().next()
        }
    }

    /// Registers the consumer with the core on first use and unregisters it when the last copy
    /// of the sequence and its iterators is gone (pushes it never took go back to the server's care).
    final class Registration: Sendable {
        private let core: ClientCore
        private let pending: Task<PushSubscriber, Never>

        init(core: ClientCore, topic: String?) {
            self.core = core
            pending = Task { await core.addSubscriber(topic: topic) }
        }

        func subscriber() async -> PushSubscriber {
            await pending.value
        }

        deinit {
            let core = self.core
            let pending = self.pending
            Task { await core.removeSubscriber(await pending.value) }
        }
    }
}

/// The link's states as an `AsyncSequence`: what ``LongLinkClient/connectionStates`` returns.
///
/// Starts with the state current when iteration begins. A slow consumer loses the oldest states
/// beyond 64, never the newest. Ends when the client stops.
public struct ConnectionStateSequence: AsyncSequence, Sendable {
    /// Each element is one state.
    public typealias Element = ConnectionState
    /// The sequence never throws.
    public typealias Failure = Never

    private let core: ClientCore

    init(core: ClientCore) {
        self.core = core
    }

    /// Creates the iterator (each iterator is its own observer).
    public func makeAsyncIterator() -> Iterator {
        Iterator(registration: Registration(core: core))
    }

    /// Returns states one at a time.
    public struct Iterator: AsyncIteratorProtocol {
        let registration: Registration

        /// The next state, or nil when the client has stopped.
        public mutating func next() async -> ConnectionState? {
            await registration.observer().next()
        }

        /// The next state, or nil when the client has stopped.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> ConnectionState? {
            await registration.observer().next()
        }
    }

    final class Registration: Sendable {
        private let core: ClientCore
        private let pending: Task<StateObserver, Never>

        init(core: ClientCore) {
            self.core = core
            pending = Task { await core.addObserver() }
        }

        func observer() async -> StateObserver {
            await pending.value
        }

        deinit {
            let core = self.core
            let pending = self.pending
            Task { await core.removeObserver(await pending.value) }
        }
    }
}

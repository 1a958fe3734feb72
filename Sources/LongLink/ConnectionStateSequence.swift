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

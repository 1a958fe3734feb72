internal import LongLinkCore
internal import LongLinkTransport
import Synchronization

/// The streams of ``LongLinkServer/sessionEvents()``: each event goes to every open stream, each
/// stream buffering at most `limit` events (the oldest are dropped for a reader that fell behind,
/// and counted).
final class SessionEventHub: Sendable {
    private let limit: Int
    private let state = Locked(State())
    /// Events dropped for readers that fell behind.
    let dropped = Atomic<Int>(0)

    private struct State {
        var streams: [UInt64: AsyncStream<SessionEvent>.Continuation] = [:]
        var nextID: UInt64 = 0
    }

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether anybody listens (events are not even made otherwise).
    var isObserved: Bool { state.withLock { !$0.streams.isEmpty } }

    func stream() -> AsyncStream<SessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: SessionEvent.self, bufferingPolicy: .bufferingNewest(limit))
        let id = state.withLock { state in
            state.nextID += 1
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ event: SessionEvent) {
        // Yielded outside the lock: a stream's termination handler takes it.
        let streams = state.withLock { Array($0.streams.values) }
        for stream in streams {
            if case .dropped = stream.yield(event) { dropped.add(1, ordering: .relaxed) }
        }
    }

    /// Ends every stream (the server stopped).
    func finish() {
        let streams = state.withLock { state in
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}

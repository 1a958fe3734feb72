import Synchronization

/// Runs `done` once `tick()` has been called `count` times (at once when `count` is 0). Thread-safe.
final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let done: @Sendable () -> Void

    init(_ count: Int, done: @escaping @Sendable () -> Void) {
        remaining = Atomic(count)
        self.done = done
        if count <= 0 {
            done()
        }
    }

    @Sendable func tick() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            done()
        }
    }
}

import LongLinkCore
import LongLinkTransport

/// The soak's request tasks that have not ended yet.
///
/// Each task takes itself out of the table as it ends, so that its memory (the task and its stack
/// slab, a few KiB) goes back at once. A task group would keep every finished child until its
/// result is awaited, that is until the end of the run: one request's task every 100 ms is about
/// 3 MiB a minute.
final class SoakTasks: Sendable {
    private struct State {
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextID = 0
    }

    private let state = Locked(State())

    init() {}

    /// Tasks started and not ended.
    var count: Int { state.withLock { $0.tasks.count } }

    /// Runs `body` in a task of its own.
    func spawn(_ body: @escaping @Sendable () async -> Void) {
        // Created under the lock: a task that ends at once waits for its own entry before removing it.
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.tasks[id] = Task { [self] in
                await body()
                self.state.withLock { _ = $0.tasks.removeValue(forKey: id) }
            }
        }
    }

    /// Returns once every task started so far has ended.
    func waitForAll() async {
        for task in state.withLock({ Array($0.tasks.values) }) { await task.value }
    }

    /// Cancels every task that has not ended.
    func cancelAll() {
        for task in state.withLock({ Array($0.tasks.values) }) { task.cancel() }
    }
}

/// Lets the rest of the test run go on during a CPU-bound loop: call `yieldIfDue()` once per
/// iteration (or per input) and it yields whenever a millisecond of work has gone by since the
/// last yield.
///
/// Swift Testing runs tests in parallel on the cooperative pool, which has only as many threads
/// as cores (two on CI). A loop that never suspends holds its thread until it ends, so a few
/// property tests starting together held both threads for seconds and every I/O test (some of
/// which time a child process or a connect) stalled behind them. Yielding by elapsed time rather
/// than every so many iterations keeps each stretch short however slow an iteration is (a debug
/// build, a loaded machine) and costs nothing measurable (a clock read per iteration, a yield per
/// millisecond). Yielding changes no inputs and skips no checks.
///
/// A yield only puts the loop back at the end of the pool's queue, so a woken I/O task still
/// waits for one stretch of every CPU-bound loop queued ahead of it. The suites with such loops
/// are therefore also `.serialized`: a few of them at a time, not forty cases at once.
package struct Pacer {
    private let slice: Duration
    private var sliceEnd: ContinuousClock.Instant

    package init(slice: Duration = .milliseconds(1)) {
        self.slice = slice
        sliceEnd = ContinuousClock.now.advanced(by: slice)
    }

    /// Yields if the current slice is used up.
    package mutating func yieldIfDue() async {
        guard ContinuousClock.now >= sliceEnd else { return }
        await Task.yield()
        sliceEnd = ContinuousClock.now.advanced(by: slice)
    }
}

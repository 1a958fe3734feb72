import Testing

@testable import LongLink

@Suite("Prefetch")
struct PrefetchTests {
    @Test("the address prefetched for a continuation is the task it resumes")
    func continuationHoldsItsTask() async {
        let (prefetched, current) = await withUnsafeContinuation {
            (continuation: UnsafeContinuation<(UInt?, UInt?), Never>) in
            // The body runs on the awaiting task, before it suspends: that is the task the
            // continuation resumes.
            let current = withUnsafeCurrentTask { task in
                task.map { UInt(bitPattern: unsafeBitCast($0, to: Int.self)) }
            }
            let prefetched = Prefetch.taskAddress(of: continuation).map { UInt(bitPattern: $0) }
            Prefetch.task(of: continuation, lines: Prefetch.coldTaskLines)
            continuation.resume(returning: (prefetched, current))
        }
        #expect(current != nil)
        #expect(prefetched == current)
    }
}

import LongLinkTestSupport
import Testing

@testable import LongLinkTransport

/// An actor whose jobs run on an event loop.
private actor LoopBoundCounter {
    let loop: EventLoop
    private var count = 0

    init(loop: EventLoop) {
        self.loop = loop
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        loop.asUnownedSerialExecutor()
    }

    func increment() -> (count: Int, onLoop: Bool) {
        count += 1
        return (count, loop.inEventLoop)
    }
}

@Suite("EventLoop", .sharedMachine)
struct EventLoopTests {
    @Test("execute runs work on the loop thread in FIFO order")
    func executeIsFIFOOnLoop() async throws {
        let loop = EventLoop(name: "test-fifo")
        let seen = Watched<[Int]>([])
        let offLoop = Watched(0)
        #expect(!loop.inEventLoop)
        for index in 0..<500 {
            loop.execute {
                if !loop.inEventLoop {
                    offLoop.update { $0 += 1 }
                }
                seen.update { $0.append(index) }
            }
        }
        let order = try await seen.wait("500 work items") { $0.count == 500 }
        #expect(order == Array(0..<500))
        #expect(offLoop.value == 0)
        await loop.shutdownAndWait()
    }

    @Test("work from other threads wakes a loop that waits with no timeout and one that waits for a timer")
    func submissionsWakeAWaitingLoop() async throws {
        let loop = EventLoop(name: "test-wake")
        let ran = Watched(0)
        // Each round lets the loop run dry first, so the next submission finds it asleep: with no
        // timer it would wait forever unless woken.
        for round in 1...100 {
            loop.execute { ran.update { $0 += 1 } }
            _ = try await ran.wait("round \(round), no timer") { $0 == round }
        }
        // The same with a far timer pending: the loop waits with a finite timeout.
        let far = loop.scheduleTimer(after: .seconds(3_600)) {}
        for round in 101...200 {
            loop.execute { ran.update { $0 += 1 } }
            _ = try await ran.wait("round \(round), far timer") { $0 == round }
        }
        loop.cancelTimer(far)
        await loop.shutdownAndWait()
    }

    @Test("work from several threads at once all runs, whether the loop is busy or asleep when it arrives")
    func concurrentSubmissionsAllRun() async throws {
        let loop = EventLoop(name: "test-wake-many")
        let ran = Watched(0)
        let threads = 4
        let perThread = 5_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for index in 0..<perThread {
                        loop.execute { ran.update { $0 += 1 } }
                        // Now and then a pause long enough for the loop to run dry and block.
                        if (index + thread) % 500 == 0 { try? await Task.sleep(for: .milliseconds(1)) }
                    }
                }
            }
        }
        _ = try await ran.wait("\(threads * perThread) work items") { $0 == threads * perThread }
        await loop.shutdownAndWait()
    }

    @Test("timers fire in deadline order (ties in scheduling order); cancelled timers never fire")
    func timersFireInOrder() async throws {
        let loop = EventLoop(name: "test-timers")
        let fired = Watched<[String]>([])
        @Sendable func record(_ name: String) -> @Sendable () -> Void {
            { fired.update { $0.append(name) } }
        }
        // From another thread: a timer and its cancellation, queued to the loop one after the other.
        let cancelledFromOutside = loop.scheduleTimer(after: .seconds(1), record("cancelled-outside"))
        loop.cancelTimer(cancelledFromOutside)
        // The rest from the loop thread, in one turn: their deadlines are counted from one instant,
        // so their order does not depend on how late this task or the loop runs.
        await onLoop(loop) {
            loop.scheduleTimer(after: .milliseconds(500), record("500"))
            loop.scheduleTimer(after: .milliseconds(100), record("100"))
            let timer = loop.scheduleTimer(after: .milliseconds(50), record("cancelled-inside"))
            loop.scheduleTimer(after: .milliseconds(200), record("200a"))
            loop.scheduleTimer(after: .milliseconds(200), record("200b"))
            loop.scheduleTimer(after: .milliseconds(300), record("300"))
            loop.cancelTimer(timer)
            // The last timer is the marker: once it fired, every cancelled deadline has passed.
            loop.scheduleTimer(after: .milliseconds(1_200), record("marker"))
        }
        let order = try await fired.wait("the marker timer") { $0.contains("marker") }
        #expect(order == ["100", "200a", "200b", "300", "500", "marker"])
        // Cancelling a timer that already fired is a no-op.
        loop.cancelTimer(EventLoopTimer(id: 1))
        await loop.shutdownAndWait()
    }

    @Test("a storm of due timers runs in slices, other work between them, every timer in order")
    func dueTimersRunInSlices() async throws {
        let loop = EventLoop(name: "test-timer-storm")
        let slice = EventLoop.expiredTimersPerIteration
        let total = slice * 3 + 7
        let fired = Watched<[Int]>([])
        let seenByQueuedWork = Watched<[Int]>([])
        await onLoop(loop) {
            for index in 0..<total {
                loop.scheduleTimer(after: .zero) {
                    fired.update { $0.append(index) }
                    // Work queued by the first timer of each slice runs once that slice is over.
                    if index % slice == 0 {
                        loop.execute { seenByQueuedWork.update { $0.append(fired.value.count) } }
                    }
                }
            }
        }
        let order = try await fired.wait("\(total) timers") { $0.count == total }
        #expect(order == Array(0..<total))
        let seen = try await seenByQueuedWork.wait("four slices") { $0.count == 4 }
        #expect(seen == [slice, slice * 2, slice * 3, total])
        await loop.shutdownAndWait()
    }

    @Test("a timer does not fire early")
    func timerDoesNotFireEarly() async throws {
        let loop = EventLoop(name: "test-timer-early")
        let start = ContinuousClock.now
        let firedAt = Watched<ContinuousClock.Instant?>(nil)
        loop.scheduleTimer(after: .milliseconds(50)) {
            firedAt.update { $0 = .now }
        }
        let instant = try await firedAt.wait("the timer") { $0 != nil }
        #expect(instant! - start >= .milliseconds(50))
        await loop.shutdownAndWait()
    }

    @Test("an actor whose executor is the loop runs on the loop thread")
    func actorRunsOnLoop() async throws {
        let loop = EventLoop(name: "test-actor")
        let counter = LoopBoundCounter(loop: loop)
        for expected in 1...50 {
            let (count, onLoop) = await counter.increment()
            #expect(count == expected)
            #expect(onLoop)
        }
        let isolated = await onLoop(loop) {
            counter.assumeIsolated { _ in loop.inEventLoop }
        }
        #expect(isolated)
        // A task that prefers the loop as its task executor runs its nonisolated code there.
        let ranOnLoop = await Task(executorPreference: loop) {
            loop.inEventLoop
        }.value
        #expect(ranOnLoop)
        await loop.shutdownAndWait()
    }

    @Test("shutdown runs queued work, is idempotent, and drops later work")
    func shutdownRunsQueuedWork() async throws {
        let loop = EventLoop(name: "test-shutdown")
        let ran = Watched(0)
        for _ in 0..<10 {
            loop.execute { ran.update { $0 += 1 } }
        }
        loop.shutdown()
        loop.shutdown()
        await loop.shutdownAndWait()
        #expect(ran.value == 10)
        #expect(!loop.tryExecute { ran.update { $0 += 100 } })
        loop.execute { ran.update { $0 += 100 } }
        #expect(ran.value == 10)
        await loop.shutdownAndWait()
    }

    @Test("a group hands out its loops round robin")
    func groupRoundRobin() async throws {
        let group = EventLoopGroup(loopCount: 3, name: "test-group")
        #expect(group.loops.count == 3)
        let picked = (0..<6).map { _ in ObjectIdentifier(group.next()) }
        let expected = (group.loops + group.loops).map { ObjectIdentifier($0) }
        // The counter may start anywhere; the pattern repeats every three picks over all three loops.
        #expect(Set(picked).count == 3)
        #expect(picked[0..<3] == picked[3..<6])
        #expect(expected.count == 6)
        let names = await withTaskGroup(of: Bool.self) { tasks in
            for loop in group.loops {
                tasks.addTask { await onLoop(loop) { loop.inEventLoop } }
            }
            return await tasks.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(names == [true, true, true])
        await group.shutdownAndWait()
        #expect(EventLoopGroup.shared.loops.count >= 1)
        EventLoopGroup.shared.shutdown()
        #expect(await onLoop(EventLoopGroup.shared.next()) { true })
    }
}

import LongLinkTestSupport
import Testing

@testable import longlink

@Suite("Soak memory", .sharedMachine)
struct SoakMemoryTests {
    /// The soak's growth: a task group kept every finished request task (a few KiB each) until the
    /// end of the run. The soak's table of request tasks lets each go as it ends.
    @Test func finishedRequestTasksAreReleased() async throws {
        let tasks = SoakTasks()
        for _ in 0..<1_000 {
            tasks.spawn { await Task.yield() }
        }
        try await within(.seconds(20), "every request task ends") { await tasks.waitForAll() }
        #expect(tasks.count == 0)
    }

    /// Tasks still running at the end are cancelled, and then end.
    @Test func runningRequestTasksAreCancelled() async throws {
        let tasks = SoakTasks()
        let started = Mailbox<Void>()
        for _ in 0..<10 {
            tasks.spawn {
                started.put(())
                try? await Task.sleep(for: .seconds(600))
            }
        }
        for _ in 0..<10 { try await started.next(within: .seconds(20), "a task started") }
        #expect(tasks.count == 10)
        tasks.cancelAll()
        try await within(.seconds(20), "cancelled tasks end") { await tasks.waitForAll() }
        #expect(tasks.count == 0)
    }

    /// Growth past the bound from the baseline sample to the end fails the run; growth within it,
    /// or a shrink, passes.
    @Test func growthAfterTheBaselineFailsTheRun() {
        var report = SoakReport()
        report.memoryGrowthLimit = 96 << 20
        report.memoryGrowthAfterBaselineLimit = 16 << 20
        report.memoryAtBaseline = SoakMemorySample(
            elapsed: .seconds(300), residentBytes: 30 << 20, heapBytesInUse: 12 << 20)
        report.memoryAtEnd = SoakMemorySample(
            elapsed: .seconds(1_800), residentBytes: (46 << 20) + 1, heapBytesInUse: 20 << 20)
        #expect(!report.memoryPlateaued)
        #expect(!report.passed)
        #expect(report.description.contains("memory at 5m00s"))
        #expect(report.description.contains("RSS 30.0 MiB, malloc in use 12.0 MiB"))
        #expect(report.description.contains("memory at end (30m00s)"))

        report.memoryAtEnd?.residentBytes = 46 << 20
        #expect(report.memoryPlateaued)
        #expect(report.passed)
        report.memoryAtEnd?.residentBytes = 20 << 20
        #expect(report.memoryGrowthAfterBaseline == -(10 << 20))
        #expect(report.passed)
    }

    /// A run takes the baseline sample (halfway through a run shorter than twice its time), hands
    /// it over when taken, and samples again when the load ends.
    @Test(.timeLimit(.minutes(10)))
    func aRunSamplesItsMemoryTwice() async throws {
        var configuration = SoakConfiguration(duration: .seconds(10))
        configuration.injectsFaults = false
        // The test process is shared with every other suite: only that the samples exist is checked.
        configuration.memoryGrowthLimit = 256 << 20
        configuration.memoryGrowthAfterBaselineLimit = 256 << 20
        let handed = Mailbox<SoakMemorySample>()
        configuration.onMemorySample = { handed.put($0) }
        let report = try await SoakRunner(configuration: configuration).run()
        let baseline = try #require(report.memoryAtBaseline)
        let end = try #require(report.memoryAtEnd)
        #expect(try await handed.next(within: .seconds(1), "the baseline sample") == baseline)
        #expect(baseline.elapsed >= .seconds(5) && baseline.elapsed < end.elapsed)
        #expect(baseline.residentBytes > 0 && baseline.heapBytesInUse > 0)
        #expect(end.residentBytes > 0 && end.heapBytesInUse > 0)
        // Its requests' outcomes are the other soak tests' subject: under the whole suite's load a
        // request here may time out.
        #expect(report.requestsSent > 0)
    }
}

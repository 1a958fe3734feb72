import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Synchronization
import Testing

@testable import LongLink

/// Nothing is retained after completion: once a caller has its outcome, the core holds no
/// reference to its call, whichever way the call ended (`longlink-bench memory` measures the same
/// in bytes).
@Suite("Calls are released once they end", .sharedMachine)
struct CallReleaseTests {
    @Test(arguments: deadlineStrategies)
    func aCallEndedAnyWayOnALiveLinkIsReleased(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint, strategy: strategy)
        // The last call is still running on the server when the client stops: no need to wait for it.
        configuration.shutdownGracePeriod = .milliseconds(100)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let core = running.client.core
        let watch = CallWatch()

        // Answered, one at a time and a thousand at once.
        #expect(try await core.perform(watch.call("echo", payload: bytes("one"))) == bytes("one"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 {
                let call = watch.call("echo", payload: bytes("many"))
                group.addTask {
                    let reply = try await core.perform(call)
                    #expect(reply == bytes("many"))
                }
            }
            try await group.waitForAll()
        }
        // Answered with an error status.
        await #expect(throws: LongLinkError.self) { try await core.perform(watch.call("fail")) }
        // Timed out.
        let timedOut = await #expect(throws: LongLinkError.self) {
            try await core.perform(watch.call("hang", timeout: .milliseconds(100)))
        }
        #expect(timedOut?.code == .deadlineExceeded)
        // Cancelled by its caller once the server runs it.
        let cancelled = watch.start("hang", on: core)
        try await probe.waitForStart(of: cancelled.id)
        cancelled.task.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.task.value }
        // Failed when the client stops with it in flight.
        let stopped = watch.start("hang", on: core)
        try await probe.waitForStart(of: stopped.id)
        await running.stop()
        await #expect(throws: (any Error).self) { try await stopped.task.value }

        try await eventually("the core released every call", within: .seconds(10)) { watch.alive == 0 }
        #expect(watch.made == 1_005)
        try await server.stop()
    }

    /// Before, a call that ended while it waited for the link stayed in the offline queue, payload
    /// and all, until the link came back: without a bound, over a long offline spell.
    @Test(arguments: deadlineStrategies)
    func aCallThatEndsInTheOfflineQueueIsReleasedAtOnce(strategy: DeadlineStrategy) async throws {
        let offline = try ReservedPort()
        defer { offline.release() }
        let running = RunningClient(.forTests(.tcp(host: "127.0.0.1", port: offline.port), strategy: strategy))
        let core = running.client.core
        let waiting = CallWatch()
        let ending = CallWatch()
        // Ten calls wait for a link that never comes, with a hundred that time out between them.
        var waitingCalls: [(id: UInt64, task: Task<[UInt8], any Error>)] = []
        var timingOut: [(id: UInt64, task: Task<[UInt8], any Error>)] = []
        for index in 0..<110 {
            if index % 11 == 0 {
                waitingCalls.append(waiting.start("echo", on: core))
            } else {
                timingOut.append(ending.start("echo", timeout: .milliseconds(50), on: core))
            }
        }
        for call in timingOut {
            let error = await #expect(throws: LongLinkError.self) { try await call.task.value }
            #expect(error?.code == .deadlineExceeded)
        }
        timingOut.removeAll()
        // And one that its caller cancels.
        let cancelled = ending.start("echo", on: core)
        try await eventually("eleven calls queued") { await running.client.statistics.queued == 11 }
        cancelled.task.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.task.value }

        // Still offline: every ended call is gone, every waiting one still waits.
        try await eventually("the core released the ended calls", within: .seconds(10)) { ending.alive == 0 }
        #expect(ending.made == 101)
        #expect(waiting.alive == 10)
        #expect(await running.client.statistics.queued == 10)

        await running.stop()
        for call in waitingCalls {
            await #expect(throws: (any Error).self) { try await call.task.value }
        }
        waitingCalls.removeAll()
        try await eventually("the core released every call", within: .seconds(10)) { waiting.alive == 0 }
    }
}

/// Makes calls and keeps a weak reference to each, to see which are still alive.
private final class CallWatch: Sendable {
    private struct WeakCall: @unchecked Sendable {
        weak var call: PendingRequest?
    }

    private let calls = Mutex<[WeakCall]>([])
    /// Shared by every watch: request ids are unique per client.
    private static let nextID = Atomic<UInt64>(0)

    func call(_ method: String, payload: [UInt8] = [], timeout: Duration = .seconds(120)) -> PendingRequest {
        let call = PendingRequest(
            id: 1_000_000 + Self.nextID.add(1, ordering: .relaxed).newValue, method: method, payload: payload,
            deadline: .now.advanced(by: timeout), idempotent: false)
        calls.withLock { $0.append(WeakCall(call: call)) }
        return call
    }

    /// Performs a new call in a task of its own; only the task holds the call.
    func start(
        _ method: String, timeout: Duration = .seconds(120), on core: ClientCore
    ) -> (id: UInt64, task: Task<[UInt8], any Error>) {
        let call = call(method, timeout: timeout)
        return (call.id, Task { try await core.perform(call) })
    }

    var made: Int { calls.withLock { $0.count } }
    var alive: Int { calls.withLock { calls in calls.count(where: { $0.call != nil }) } }
}

extension Probe {
    /// Waits until the `hang` handler runs the request with this id.
    fileprivate func waitForStart(of id: UInt64) async throws {
        while try await events.next(within: .seconds(20), "the server to run request \(id)") != "started \(id)" {}
    }
}

import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@testable import LongLink

/// The connect race on a manual clock, with attempts the test finishes by hand.
@Suite("Connect race", .sharedMachine)
struct ConnectRaceTests {
    /// Attempts that wait until the test tells each how it ends; cancelling one ends it with
    /// `cancelled`, as a real connect does, unless `cancellable` is false: a connect that succeeds
    /// just as the race cancels it.
    final class Attempts: Sendable {
        let started = Mailbox<String>()
        let discarded = Mailbox<Int>()
        private let outcomes: [String: Mailbox<Result<Int, LongLinkError>>]
        private let cancellable: Bool

        init(_ names: [String], cancellable: Bool = true) {
            outcomes = Dictionary(uniqueKeysWithValues: names.map { ($0, Mailbox()) })
            self.cancellable = cancellable
        }

        func finish(_ name: String, _ result: Result<Int, LongLinkError>) {
            outcomes[name]!.put(result)
        }

        func run(_ endpoint: Endpoint) async throws(LongLinkError) -> Int {
            guard case .tcp(let name, _) = endpoint, let outcome = outcomes[name] else { fatalError() }
            started.put(name)
            let failure = Result<Int, LongLinkError>.failure(LongLinkError(code: .unknown, message: "test"))
            guard cancellable else {
                // An unstructured task: the race's cancellation does not end this wait.
                return try await Task { (try? await outcome.next(within: .seconds(30))) ?? failure }.value.get()
            }
            let result = await withTaskCancellationHandler {
                (try? await outcome.next(within: .seconds(30))) ?? failure
            } onCancel: {
                outcome.put(.failure(LongLinkError(code: .cancelled, message: "race decided")))
            }
            return try result.get()
        }
    }

    let loop = EventLoopGroup.shared.next()

    private func endpoints(_ names: String...) -> [Endpoint] { names.map { .tcp(host: $0, port: 1) } }

    private func race(
        _ candidates: [Endpoint], _ attempts: Attempts, clock: ManualClock
    ) -> Task<ConnectRace.Outcome<Int>, Never> {
        let loop = self.loop
        return Task {
            await ConnectRace.run(
                candidates, stagger: .milliseconds(250), clock: LoopClock(clock), loop: loop,
                attempt: { endpoint throws(LongLinkError) in try await attempts.run(endpoint) },
                discard: { attempts.discarded.put($0) })
        }
    }

    /// The second endpoint starts only when the stagger passes with the first still connecting;
    /// the first Welcome wins and the slow one is cancelled.
    @Test func theNextEndpointStartsAfterTheStaggerAndTheFirstSuccessWins() async throws {
        let clock = ManualClock()
        let attempts = Attempts(["a", "b", "c"])
        let task = race(endpoints("a", "b", "c"), attempts, clock: clock)
        #expect(try await attempts.started.next() == "a")
        try await eventually("the stagger timer") { clock.scheduledCount == 1 }
        await clock.advance(by: .milliseconds(249))
        #expect(clock.scheduledCount == 1)
        await clock.advance(by: .milliseconds(1))
        #expect(try await attempts.started.next() == "b")
        attempts.finish("b", .success(2))
        let outcome = await task.value
        #expect(outcome.winner?.endpoint == .tcp(host: "b", port: 1))
        #expect(outcome.winner?.value == 2)
        // "a" was cancelled, which is not a failure; "c" never started.
        #expect(outcome.failures.isEmpty)
        #expect(clock.scheduledCount == 0)
    }

    /// A failure starts the next endpoint at once, without waiting for the stagger.
    @Test func aFailureStartsTheNextAtOnce() async throws {
        let clock = ManualClock()
        let attempts = Attempts(["a", "b"])
        let task = race(endpoints("a", "b"), attempts, clock: clock)
        #expect(try await attempts.started.next() == "a")
        attempts.finish("a", .failure(LongLinkError(code: .connectionRefused, message: "refused")))
        #expect(try await attempts.started.next() == "b")
        attempts.finish("b", .success(7))
        let outcome = await task.value
        #expect(outcome.winner?.value == 7)
        #expect(outcome.failures.map(\.endpoint) == [.tcp(host: "a", port: 1)])
        #expect(outcome.failures.first?.error.code == .connectionRefused)
    }

    /// A race of "a" and "b" with both attempts under way: "b" started when the stagger passed.
    private func bothStarted(
        cancellable: Bool = true
    ) async throws -> (Attempts, Task<ConnectRace.Outcome<Int>, Never>) {
        let clock = ManualClock()
        let attempts = Attempts(["a", "b"], cancellable: cancellable)
        let task = race(endpoints("a", "b"), attempts, clock: clock)
        #expect(try await attempts.started.next() == "a")
        try await eventually("the stagger timer") { clock.scheduledCount == 1 }
        await clock.advance(by: .milliseconds(250))
        #expect(try await attempts.started.next() == "b")
        return (attempts, task)
    }

    /// Every attempt fails: no winner, and every failure reported.
    @Test func whenAllFailThereIsNoWinner() async throws {
        let (attempts, task) = try await bothStarted()
        attempts.finish("b", .failure(LongLinkError(code: .connectTimeout, message: "slow")))
        attempts.finish("a", .failure(LongLinkError(code: .connectionRefused, message: "refused")))
        let outcome = await task.value
        #expect(outcome.winner == nil)
        // Both ended at about the same moment: each is reported, in whichever order they ended.
        #expect(Set(outcome.failures.map(\.error.code)) == [.connectTimeout, .connectionRefused])
        #expect(Set(outcome.failures.map(\.endpoint)) == Set(endpoints("a", "b")))
    }

    /// Two attempts succeed: the race keeps one, and hands the other to `discard` (which closes
    /// its connection). The loser succeeds although cancelled: were the cancellation to end it
    /// first, it would never succeed, and the test would depend on which thread ran first.
    @Test func aSecondSuccessIsDiscarded() async throws {
        let (attempts, task) = try await bothStarted(cancellable: false)
        attempts.finish("a", .success(1))
        attempts.finish("b", .success(2))
        let outcome = await task.value
        let discarded = try await attempts.discarded.next()
        #expect(Set([outcome.winner?.value, discarded]) == [1, 2])
    }
}

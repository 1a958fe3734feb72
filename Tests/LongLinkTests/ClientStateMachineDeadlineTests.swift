import LongLinkTestSupport
import Testing

@testable import LongLink

/// The machine's one deadline timer (``DeadlineStrategy/deadlineHeap``), placed by the machine and
/// driven here with instants of our own: no clock, no loop.
@Suite("Client state machine: the deadline timer", .sharedMachine)
struct ClientStateMachineDeadlineTests {
    private let origin = ContinuousClock.now

    /// A machine holding a queued request for each deadline, `seconds` after `origin`, each tracked
    /// as the core tracks it; where the timer was moved to at each.
    private func tracked(_ seconds: [Duration], machine: inout MachineDriver.Machine) -> [ContinuousClock.Instant?] {
        var moves: [ContinuousClock.Instant?] = []
        for (index, offset) in seconds.enumerated() {
            let request = PendingRequest(
                id: UInt64(index + 1), method: "m", payload: [], deadline: origin + offset, idempotent: false)
            _ = machine.admit(request, caller: index + 1, now: origin, session: 0, writable: { _ in true })
            moves.append(machine.trackDeadline(request))
        }
        return moves
    }

    private func machine(queueLimit: Int = 8) -> MachineDriver.Machine {
        MachineDriver.Machine(
            book: RequestBook(queueLimit: queueLimit), ledger: PushLedger(holdLimit: 1), origin: origin)
    }

    @Test func theTimerMovesOnlyToAnEarlierDeadlineAndComesBackForTheNext() {
        var machine = machine()
        let moves = tracked(
            [.seconds(10), .seconds(20), .seconds(5), .seconds(20) + .microseconds(500)], machine: &machine)
        #expect(moves == [origin + .seconds(10), nil, origin + .seconds(5), nil])
        let first = machine.deadlinesDue(at: origin + .seconds(6))
        #expect(first == [3])
        _ = machine.remove(3)
        let next = machine.deadlineTimerAfterExpiries(at: origin + .seconds(6), sliceWasFull: false)
        #expect(next == origin + .seconds(10))
        let second = machine.deadlinesDue(at: origin + .seconds(20))
        #expect(second == [1, 2])
        // What is left is due within the resolution: the timer comes back no sooner than that.
        let last = machine.deadlineTimerAfterExpiries(at: origin + .seconds(20), sliceWasFull: false)
        #expect(last == origin + .seconds(20) + .milliseconds(1))
    }

    @Test func aFullSliceOfExpiriesComesBackAtTheNextTurn() {
        var machine = machine(queueLimit: 2_000)
        let count = MachineDriver.Machine.expiriesPerSlice + 1
        _ = tracked(Array(repeating: .seconds(1), count: count), machine: &machine)
        let now = origin + .seconds(2)
        let due = machine.deadlinesDue(at: now)
        #expect(due.count == MachineDriver.Machine.expiriesPerSlice)
        for id in due { _ = machine.remove(id) }
        let again = machine.deadlineTimerAfterExpiries(at: now, sliceWasFull: true)
        #expect(again == now)
        let rest = machine.deadlinesDue(at: now)
        #expect(rest.count == 1 && !due.contains(rest[0]))
    }
}

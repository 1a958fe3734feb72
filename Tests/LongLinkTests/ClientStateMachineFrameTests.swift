import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// The client's one machine fed the frames a link reads, as `ClientCore.linkReceived` hands them
/// in: what each frame does comes out as actions. No socket, no event loop, no clock.
@Suite("Client state machine: frames", .sharedMachine)
struct ClientStateMachineFrameTests {
    /// A consumer's buffer of `limit` pushes.
    final class Buffer: PushConsumer {
        let limit: Int
        var pushes: [Push] = []
        var isFinished: Bool { false }
        var isBelowHalf: Bool { pushes.count < limit / 2 }

        init(limit: Int) {
            self.limit = limit
        }

        func offer(_ push: Push, wakeLater: Bool) -> (offered: PushSubscriber.Offered, wake: Bool) {
            guard pushes.count < limit else { return (.refused, false) }
            pushes.append(push)
            return (.accepted, pushes.count == 1)
        }
    }

    typealias Machine = ClientStateMachine<Int, Buffer>
    private let now = ContinuousClock.now
    private let plain = PayloadInflation(negotiated: false, maxFrameBytes: 1 << 20, maxInflationRatio: 64)

    private func machine() -> Machine {
        Machine(book: RequestBook(queueLimit: 16), ledger: PushLedger(holdLimit: 4, maxBatch: 256))
    }

    /// A new link, welcomed and logged in.
    private func connect(_ machine: inout Machine) -> UInt64 {
        let generation = machine.newGeneration()
        _ = machine.attach(generation)
        let handled = machine.received(.welcome(Frame.Welcome()), on: generation, now: now, inflate: plain)
        #expect(handled.keepReading)
        _ = machine.loginSucceeded(generation, loggedIn: true)
        return generation
    }

    /// Admits request `id`, written on `generation`.
    private func call(_ id: UInt64, on generation: UInt64, _ machine: inout Machine) {
        let request = PendingRequest(
            id: id, method: "m", payload: [], deadline: now + .seconds(60), idempotent: false, bypassesGate: false,
            linkGeneration: 0)
        let action = machine.admit(request, caller: Int(id), now: now, session: 0, writable: { _ in true })
        #expect(action.writtenOn == generation)
    }

    private func read(_ frame: Frame, on generation: UInt64, _ machine: inout Machine) -> Machine.FrameHandled {
        machine.received(frame, on: generation, now: now, inflate: plain)
    }

    @Test func theHandshakeTakesTheWelcomeAndRefusesAnyOtherFirstFrameOnce() {
        var machine = machine()
        let generation = machine.newGeneration()
        _ = machine.attach(generation)
        let first = read(.ping(Frame.Ping(nonce: 1)), on: generation, &machine)
        #expect(!first.keepReading)
        #expect(first.actions.goAwayCodes(on: generation) == [.invalidArgument])
        #expect(first.actions.closes(generation) == [.protocolViolation])
        // Closing already: the next violation says nothing more.
        let again = read(.ping(Frame.Ping(nonce: 2)), on: generation, &machine)
        #expect(again.actions.goAwayCodes(on: generation).isEmpty && again.actions.closes(generation).isEmpty)

        let next = machine.newGeneration()
        _ = machine.attach(next)
        let welcomed = read(.welcome(Frame.Welcome(maxInFlight: 2)), on: next, &machine)
        #expect(welcomed.keepReading)
        #expect(welcomed.actions.contains { if case .welcomed(next, _) = $0 { true } else { false } })
        #expect(machine.inFlightLimit(next) == 2)
    }

    @Test func aReplyResumesItsCallerOnceAndALateOneIsCountedUnknown() {
        var machine = machine()
        let link = connect(&machine)
        call(1, on: link, &machine)
        call(2, on: link, &machine)
        let reply = read(.response(Frame.Response(requestID: "1", payload: [7])), on: link, &machine)
        #expect(reply.actions.resumed == [1: .success([7])])
        let late = read(.response(Frame.Response(requestID: "1", payload: [7])), on: link, &machine)
        #expect(late.actions.resumed.isEmpty && machine.stats.unknownReplies == 1)
        // The server gave up on the budget: a timeout like the client's own.
        let status = Frame.Status(code: .deadlineExceeded, message: "late")
        let timedOut = read(.response(Frame.Response(requestID: "2", status: status)), on: link, &machine)
        #expect(timedOut.actions.resumed == [2: .failure(.deadlineExceeded)])
        #expect(machine.stats.timeouts == 1 && machine.stats.repliesReceived == 2 && machine.book.isEmpty)
    }

    @Test func aCompressedPayloadOnALinkThatDidNotAgreeFailsItsCaller() {
        var machine = machine()
        let link = connect(&machine)
        call(1, on: link, &machine)
        var response = Frame.Response(requestID: "1", payload: [1, 2, 3])
        response.compression = 1
        let handled = read(.response(response), on: link, &machine)
        #expect(handled.actions.resumed.count == 1 && handled.actions.resumed[1] != .success([1, 2, 3]))
        #expect(machine.stats.compressionFailures == 1)
    }

    @Test func aPingIsAnsweredAndAPongMeasuresTheRoundTripAndReportsTheLoad() {
        var machine = machine()
        machine.leaveAtLoadPermille = 900
        machine.supervision.hasAlternatives = true
        let link = connect(&machine)
        let ping = read(.ping(Frame.Ping(nonce: 9)), on: link, &machine)
        guard case .send(.pong(let pong), link) = ping.actions.first else {
            Issue.record("no Pong: \(ping.actions)")
            return
        }
        #expect(pong.nonce == 9)
        machine.pingSent(on: link, nonce: 5, at: now - .milliseconds(40))
        // Another nonce (a push barrier's): no round trip.
        _ = read(.pong(Frame.Pong(nonce: 6)), on: link, &machine)
        #expect(machine.stats.lastRoundTrip == nil)
        let answered = read(.pong(Frame.Pong(nonce: 5, loadPermille: 950)), on: link, &machine)
        #expect(machine.stats.lastRoundTrip == .milliseconds(40))
        #expect(answered.actions.contains { if case .wakeSupervisor(link, .overloaded(950)) = $0 { true } else { false } })
        // Below the leaving load, or with nowhere else to go: the supervisor is not woken.
        #expect(read(.pong(Frame.Pong(nonce: 0, loadPermille: 899)), on: link, &machine).actions.isEmpty)
        machine.supervision.hasAlternatives = false
        #expect(read(.pong(Frame.Pong(nonce: 0, loadPermille: 999)), on: link, &machine).actions.isEmpty)
    }

    @Test func aReliablePushGoesToItsConsumersAndAFullBufferDefersTheNext() {
        var machine = machine()
        let link = connect(&machine)
        let buffer = Buffer(limit: 1)
        _ = machine.ledger.consumerAdded(buffer, id: 1, filter: .exact("alerts"))
        let first = read(.push(Frame.Push(seq: 1, topic: "alerts", payload: [1], epoch: 3)), on: link, &machine)
        #expect(buffer.pushes.map(\.seq) == [1] && first.actions.isEmpty)
        #expect(machine.ledger.seqs[PushKey(epoch: 3, seq: 1)] == .buffered(holders: 1, taken: false))
        #expect(machine.consumersToWake.count == 1)
        let second = read(.push(Frame.Push(seq: 2, topic: "alerts", payload: [2], epoch: 3)), on: link, &machine)
        #expect(buffer.pushes.map(\.seq) == [1] && machine.ledger.deferring)
        #expect(second.actions.contains { if case .log(.warning, _) = $0 { true } else { false } })
        #expect(machine.stats.reliablePushesDeferred == 1 && machine.stats.pushesReceived == 2)
        // A best-effort push nobody wants is dropped.
        _ = read(.push(Frame.Push(topic: "news", payload: [3])), on: link, &machine)
        #expect(machine.stats.bestEffortPushesDropped == 1)
    }

    @Test func aGoAwayLetsWrittenRequestsBeAnsweredAndTellsASupervisorWithSomewhereToGo() {
        var machine = machine()
        machine.supervision.hasAlternatives = true
        let link = connect(&machine)
        call(1, on: link, &machine)
        let goAway = read(.goAway(Frame.GoAway(reconnect: true)), on: link, &machine)
        #expect(goAway.actions.contains { if case .tellGoingAway(link, _) = $0 { true } else { false } })
        #expect(goAway.actions.closes(link).isEmpty, "the written request is answered first")
        // Its reply drains the link: it closes.
        let reply = read(.response(Frame.Response(requestID: "1")), on: link, &machine)
        #expect(reply.actions.resumed == [1: .success([])])
        #expect(reply.actions.contains { if case .closeDrained(link) = $0 { true } else { false } })
    }

    @Test func theGateOpensWithSyncThenTheQueueThenTheSubscriptionsOnce() {
        var machine = machine()
        let generation = machine.newGeneration()
        _ = machine.attach(generation)
        _ = read(.welcome(Frame.Welcome()), on: generation, &machine)
        let request = PendingRequest(
            id: 1, method: "m", payload: [], deadline: now + .seconds(60), idempotent: false, bypassesGate: false,
            linkGeneration: 0)
        #expect(machine.admit(request, caller: 1, now: now, session: 0, writable: { _ in true }).isQueued)
        guard let opened = machine.openGate(generation, loggedIn: true) else {
            Issue.record("the gate did not open")
            return
        }
        #expect(opened.count == 3)
        if case .send(.sync, generation) = opened.first {} else { Issue.record("Sync is not first: \(opened)") }
        if case .drainQueue(generation) = opened[1] {} else { Issue.record("the queue is not second: \(opened)") }
        if case .nudgeSubscriptions = opened.last {} else { Issue.record("the keeper is not last: \(opened)") }
        _ = machine.linkClosed(generation, error: nil, serverWindow: false)
        #expect(machine.openGate(generation, loggedIn: true) == nil, "the link is gone")
    }

    @Test func aMalformedFrameClosesTheLinkSayingWhy() {
        var machine = machine()
        let link = connect(&machine)
        let tooLarge = machine.malformed(link, WireFormatError(.frameTooLarge(length: 9, limit: 8), field: "frame", offset: 0))
        #expect(tooLarge.goAwayCodes(on: link) == [.resourceExhausted])
        #expect(tooLarge.closes(link) == [.frameTooLarge])
    }

    @Test func aCancelTellsTheServerThenResumesAndARequestEndingAShutdownCompletesIt() {
        var machine = machine()
        let link = connect(&machine)
        call(1, on: link, &machine)
        call(2, on: link, &machine)
        let cancelled = machine.cancel(1)
        guard case .send(.cancel(let frame), link) = cancelled.first else {
            Issue.record("no Cancel: \(cancelled)")
            return
        }
        #expect(frame.requestID == "1" && cancelled.resumed == [1: .failure(nil)])
        #expect(machine.cancel(1).isEmpty, "ended already")
        _ = machine.beginShutdown()
        // The last written request ends: the shutdown completes, then the link's fate is asked.
        let expired = machine.expire(2)
        #expect(expired.resumed == [2: .failure(.deadlineExceeded)] && machine.stats.timeouts == 1)
        #expect(expired.count == 3)
        #expect(expired.contains { if case .completeShutdown = $0 { true } else { false } })
        #expect(expired.contains { if case .writtenRequestEnded(link) = $0 { true } else { false } })
        #expect(machine.expire(2).isEmpty)
    }
}

/// How a caller was resumed, compared by the error's code (nil: not a ``LongLinkError``).
enum Resumed: Equatable {
    case success([UInt8])
    case failure(LongLinkError.Code?)
}

extension [ClientStateMachine<Int, ClientStateMachineFrameTests.Buffer>.Action] {
    /// Each resumed caller, with how.
    var resumed: [Int: Resumed] {
        var resumed: [Int: Resumed] = [:]
        for case .resume(let entry, let result) in self {
            switch result {
            case .success(let payload): resumed[entry.caller] = .success(payload)
            case .failure(let error): resumed[entry.caller] = .failure((error as? LongLinkError)?.code)
            }
        }
        return resumed
    }

    /// The codes of the `GoAway`s written on `generation`.
    func goAwayCodes(on generation: UInt64) -> [StatusCode] {
        compactMap { if case .send(.goAway(let goAway), generation) = $0 { goAway.code } else { nil } }
    }

    /// The error codes `generation` is closed with (nil: no error).
    func closes(_ generation: UInt64) -> [LongLinkError.Code?] {
        var codes: [LongLinkError.Code?] = []
        for case .close(generation, _, let error) in self { codes.append(error?.code) }
        return codes
    }
}

/// A consumer's start and what it hands to the app, decided by the machine.
@Suite("Client state machine: consumers", .sharedMachine)
struct ClientStateMachineConsumerTests {
    typealias Buffer = ClientStateMachineFrameTests.Buffer
    typealias Machine = ClientStateMachineFrameTests.Machine

    private func machine() -> Machine {
        Machine(book: RequestBook(queueLimit: 16), ledger: PushLedger(holdLimit: 4, maxBatch: 1))
    }

    @Test func aConsumerOfAnEndedSessionOrAStoppedClientIsRefusedAndANewOneTakesWhatWasHeld() {
        var machine = machine()
        let generation = machine.newGeneration()
        _ = machine.attach(generation)
        _ = machine.receivedWelcome(generation, version: Frame.protocolVersion, maxInFlight: 0)
        _ = machine.loginSucceeded(generation, loggedIn: true)
        let held = Push(seq: 1, topic: "alerts", payload: [1], epoch: 2)
        #expect(machine.ledger.received(held, on: generation).delivery == .held)
        let old = machine.addConsumer(Buffer(limit: 4), id: 1, filter: .all, madeIn: 0, session: 1, hasLink: true)
        guard case .endedSession = old else {
            Issue.record("a consumer of an ended session was admitted: \(old)")
            return
        }
        let buffer = Buffer(limit: 4)
        guard case .added = machine.addConsumer(buffer, id: 2, filter: .all, madeIn: 1, session: 1, hasLink: true)
        else {
            Issue.record("refused")
            return
        }
        #expect(buffer.pushes == [held] && machine.ledger.held.isEmpty)
        // Handed to the app: acknowledged (a batch of one goes out at once) and counted.
        let took = machine.consumerTook([held.key])
        #expect(took.contains { if case .pushes(.ack(generation, 2, [1])) = $0 { true } else { false } })
        #expect(machine.stats.pushesDelivered == 1)
        _ = machine.beginShutdown()
        let late = machine.addConsumer(Buffer(limit: 4), id: 3, filter: .all, madeIn: 1, session: 1, hasLink: false)
        guard case .stopping = late else {
            Issue.record("a consumer was admitted while shutting down without a link: \(late)")
            return
        }
    }

    @Test func deferringEndsOnlyOnceEveryConsumerIsBelowHalfFull() {
        var machine = machine()
        let generation = machine.newGeneration()
        _ = machine.attach(generation)
        _ = machine.receivedWelcome(generation, version: Frame.protocolVersion, maxInFlight: 0)
        _ = machine.loginSucceeded(generation, loggedIn: true)
        let small = Buffer(limit: 2)
        let large = Buffer(limit: 4)
        _ = machine.addConsumer(small, id: 1, filter: .all, madeIn: 0, session: 0, hasLink: true)
        _ = machine.addConsumer(large, id: 2, filter: .all, madeIn: 0, session: 0, hasLink: true)
        let inflation = PayloadInflation(negotiated: false, maxFrameBytes: 1 << 20, maxInflationRatio: 64)
        for seq in 1...3 as ClosedRange<UInt64> {
            _ = machine.received(
                .push(Frame.Push(seq: seq, topic: "t", payload: [], epoch: 1)), on: generation, now: .now,
                inflate: inflation)
        }
        #expect(machine.ledger.deferring)
        // The large one handed one over and stays at half: still deferring.
        large.pushes.removeFirst()
        #expect(!machine.consumerTook([]).contains { if case .pushes(.sync) = $0 { true } else { false } })
        #expect(machine.ledger.deferring)
        small.pushes.removeAll()
        large.pushes.removeAll()
        #expect(machine.consumerTook([]).contains { if case .pushes(.sync) = $0 { true } else { false } })
        #expect(!machine.ledger.deferring)
    }
}

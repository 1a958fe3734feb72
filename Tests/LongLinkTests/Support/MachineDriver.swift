import LongLinkWire
import Testing

@testable import LongLink

/// A ``ClientStateMachine`` driven as `ClientCore` drives it, with every caller a number and every
/// socket a list of what was written on it, so that a test sees each caller resumed exactly once.
struct MachineDriver {
    typealias Machine = ClientStateMachine<Int, Void>

    var machine = Machine(
        book: RequestBook(queueLimit: 16), ledger: PushLedger(holdLimit: 8, maxBatch: 256))
    /// The current session's number (``ClientCore/session``).
    var session: UInt64 = 0
    /// Whether every link's write buffer takes more.
    var writable = true
    /// Callers admitted and not yet resumed.
    var waiting: Set<Int> = []
    /// Request ids written on each link, in order, with whether each was a copy (`resent`).
    var written: [UInt64: [(id: UInt64, resent: Bool)]] = [:]
    private var lastID: UInt64 = 0

    /// Attaches, welcomes and logs in a new current link; its generation.
    mutating func connect(maxInFlight: UInt32 = 0, loggedIn: Bool = true) -> UInt64 {
        let generation = machine.links.newGeneration()
        guard case .awaitWelcome = machine.attach(generation) else {
            Issue.record("link \(generation) refused")
            return generation
        }
        _ = machine.receivedWelcome(generation, version: Frame.protocolVersion, maxInFlight: maxInFlight)
        open(generation, loggedIn: loggedIn)
        return generation
    }

    /// Opens the gate of `generation` after its login; the acks that go out with its `Sync`.
    @discardableResult
    mutating func open(_ generation: UInt64, loggedIn: Bool = true) -> [PushLedger<Void>.Action] {
        guard let opened = machine.loginSucceeded(generation, loggedIn: loggedIn) else { return [] }
        if opened.drain { drain(generation) }
        return opened.acks
    }

    /// Makes one call (a login call of link `login` when given), as `ClientCore.admit` does.
    @discardableResult
    mutating func call(
        idempotent: Bool = false, login: UInt64? = nil, madeIn session: UInt64? = nil
    ) -> (id: UInt64, action: Machine.AdmitAction) {
        lastID += 1
        let request = PendingRequest(
            id: lastID, method: "m", payload: [1, 2, 3], deadline: .now + .seconds(3_600), idempotent: idempotent,
            bypassesGate: login != nil, linkGeneration: login ?? 0,
            session: login == nil ? (session ?? self.session) : nil)
        let caller = Int(lastID)
        waiting.insert(caller)
        let writable = self.writable
        let action = machine.admit(
            request, caller: caller, now: .now, session: self.session, writable: { _ in writable })
        switch action {
        case .write(let generation): written[generation, default: []].append((lastID, false))
        case .queued: break
        case .refuse: resume(caller)
        }
        return (lastID, action)
    }

    /// Writes queued requests on `generation` while the machine lets it.
    mutating func drain(_ generation: UInt64) {
        while let (request, resent) = machine.dequeue(writingOn: generation, writable: writable) {
            written[generation, default: []].append((request.id, resent))
        }
    }

    /// Request `id` ended (a reply, a timeout); what its link does now, performed as the core does.
    @discardableResult
    mutating func end(_ id: UInt64) -> Machine.Action? {
        guard let entry = machine.remove(id) else { return nil }
        resume(entry.caller)
        if machine.shutdownIsIdle { _ = completeShutdown() }
        guard case .written(let generation) = entry.stage else { return nil }
        let action = machine.writtenRequestEnded(on: generation)
        if case .drainQueue(let open) = action { drain(open) }
        return action
    }

    /// The transport closed `generation`: the failed callers resume; the queue goes on the open link.
    mutating func closed(_ generation: UInt64, serverWindow: Bool = false) -> Machine.LinkClosed {
        let outcome = machine.linkClosed(generation, error: nil, serverWindow: serverWindow)
        for entry in outcome.settlement.failed { resume(entry.caller) }
        if let open = outcome.drain { drain(open) }
        return outcome
    }

    /// Completes the shutdown: the callers it fails resume; its actions, for the test to read.
    mutating func completeShutdown() -> [Machine.Action] {
        let actions = machine.completeShutdown()
        for case .resume(let entry, _) in actions { resume(entry.caller) }
        return actions
    }

    mutating func fail(_ entries: [RequestBook<Int>.Entry]) {
        for entry in entries { resume(entry.caller) }
    }

    /// The ids written on `generation`, in order.
    func ids(on generation: UInt64) -> [UInt64] {
        written[generation, default: []].map(\.id)
    }

    private mutating func resume(_ caller: Int) {
        #expect(waiting.remove(caller) != nil, "caller \(caller) resumed twice, or never waited")
    }
}

extension ClientStateMachine.AdmitAction {
    var isQueued: Bool {
        if case .queued = self { return true }
        return false
    }

    var writtenOn: UInt64? {
        if case .write(let generation) = self { return generation }
        return nil
    }

    var refusal: ClientStateMachine.Refusal? {
        if case .refuse(let refusal) = self { return refusal }
        return nil
    }
}

extension ClientStateMachine.Action {
    /// The id of the request this action resumes, if it resumes one.
    var resumed: UInt64? {
        if case .resume(let entry, _) = self { return entry.request.id }
        return nil
    }
}

import FuzzKit
import LongLinkWire

@testable import LongLink

/// The script's events fed to the client's own machine, ``ClientStateMachine``, with each caller a
/// number so that a caller resumed twice or never is seen. What the machine decides (each frame,
/// where a request goes, what a request's or a link's end does, the shutdown, the acks) is its
/// own; this only stands for the sockets, the callers and the consumers' buffers, and performs the
/// machine's actions as `ClientCore.run(_:)` does.
struct ClientScript {
    typealias Machine = ClientStateMachine<Int, Consumer>

    // Small bounds, so that short inputs reach them.
    var machine = Machine(
        book: RequestBook(queueLimit: 6, queueByteLimit: 96), ledger: PushLedger(holdLimit: 3, maxBatch: 3))

    /// The current link's socket.
    var link: Link?
    var nextRequestID: UInt64 = 0
    var nextCaller = 0
    /// Callers suspended on a request: admitted, not yet resumed.
    var waiting: Set<Int> = []

    var nextConsumerID: UInt64 = 0
    /// Every reliable push some consumer handed to the app.
    var takenByApp: Set<PushKey> = []
    /// Epochs whose de-duplicator ``PushLedger`` forgot (it keeps the last few): their repeats may
    /// be delivered again, as documented.
    var forgottenEpochs: Set<UInt64> = []
    /// The last request written on each link, by id (ids count up in the order calls are made):
    /// calls go out in the order they were made, a login call aside (it never waits in line).
    var lastWritten: [UInt64: UInt64] = [:]

    /// The current link's socket, as the core's `Link` object knows it.
    struct Link {
        let generation: UInt64
        var dedupeWindow = false
        var maxFrameBytes = Frame.defaultMaxFrameBytes
        /// The transport was told to close it; its `linkClosed` may follow.
        var closing = false
    }

    /// A consumer's buffer (the core's `PushSubscriber`), registered in the machine's ledger.
    final class Consumer: PushConsumer {
        let limit: Int
        var buffer: [Push] = []
        /// Reliable pushes this consumer handed to the app: never one twice.
        var delivered: Set<PushKey> = []
        var isFinished: Bool { false }
        var isBelowHalf: Bool { buffer.count < limit / 2 }

        init(limit: Int) {
            self.limit = limit
        }

        /// As `PushSubscriber.offer`: into the buffer while it has room.
        func offer(_ push: Push, wakeLater: Bool) -> (offered: PushSubscriber.Offered, wake: Bool) {
            guard buffer.count < limit else { return (.refused, false) }
            buffer.append(push)
            return (.accepted, false)
        }
    }

    var consumers: [UInt64: Consumer] {
        machine.ledger.consumers.byID.mapValues(\.value)
    }

    mutating func handle(_ event: ClientEvent, _ input: inout FuzzInput) {
        switch event {
        case .connect: connect()
        case .frame: received(input.frame())
        case .loginSucceeded:
            if let link { openGate(link.generation) }
        case .request:
            request(idempotent: input.bool(), login: input.bool(), payloadBytes: input.int(below: 64))
        case .giveUp: giveUp(pick(from: machine.book.entries.keys.sorted(), &input), cancelled: input.bool())
        case .linkClosed: linkClosed()
        case .tick: tick(received: input.bool(), sent: input.bool())
        case .addConsumer:
            let topics: [String?] = [nil, "a", "b"]
            addConsumer(topic: topics[input.int(below: topics.count)], limit: 1 + input.int(below: 4))
        case .take:
            take(from: pick(from: consumers.keys.sorted(), &input), count: 1 + input.int(below: 4))
        case .removeConsumer: removeConsumer(pick(from: consumers.keys.sorted(), &input))
        case .shutdown: shutdown()
        case .ackTimer: run(machine.ackTimerFired())
        case .terminate: terminate()
        }
    }

    private func pick<T>(from values: [T], _ input: inout FuzzInput) -> T? {
        values.isEmpty ? nil : values[input.int(below: values.count)]
    }

    // MARK: Callers

    private mutating func resume(_ caller: Int) {
        check(waiting.remove(caller) != nil, "caller \(caller) resumed twice, or never suspended")
    }

    private mutating func fail(_ entries: [RequestBook<Int>.Entry]) {
        for entry in entries { resume(entry.caller) }
    }

    /// As `ClientCore.run`: what the machine decided, in order.
    mutating func run(_ actions: [Machine.Action]) {
        for action in actions { run(action) }
    }

    private mutating func run(_ action: Machine.Action) {
        switch action {
        case .drainQueue(let generation): drain(generation)
        case .closeDrained(let generation), .retire(let generation), .close(let generation, _, _):
            if link?.generation == generation { link?.closing = true }
        case .pushes(let action): perform([action])
        case .resume(let entry, _): resume(entry.caller)
        case .completeShutdown: completeShutdown()
        case .endConsumers: finishConsumers()
        case .writtenRequestEnded(let generation):
            if let action = machine.writtenRequestEnded(on: generation) { run(action) }
        case .welcomed(let generation, let welcome):
            guard link?.generation == generation else { return }
            link?.dedupeWindow = welcome.dedupeWindowMilliseconds > 0
            link?.maxFrameBytes = ServerBounds.maxFrameBytes(offered: welcome.maxFrameBytes)
            _ = ServerBounds.heartbeat(offered: welcome.heartbeatMilliseconds, proposed: .seconds(10))
        case .tellGoingAway(_, let goAway):
            _ = ServerBounds.retryAfter(milliseconds: goAway.retryAfterMilliseconds)
        case .send, .wakeSupervisor, .log, .schedule, .cancel, .sendPing, .linkDead, .wakeRetry, .probeLiveness,
            .nudgeSubscriptions, .endLoginWaits, .forget, .refreshCredential:
            break
        }
    }

    // MARK: Link

    private mutating func connect() {
        guard link == nil else { return }
        let generation = machine.newGeneration()
        guard case .awaitWelcome = machine.attach(generation) else { return }
        link = Link(generation: generation)
    }

    /// As `ClientCore.close`: the transport closes and later reports ``linkClosed()``.
    private mutating func close() {
        guard let generation = link?.generation, machine.closeRequested(generation) else { return }
        link?.closing = true
    }

    /// As `ClientCore.linkReceived`: one frame, decided by the machine.
    private mutating func received(_ result: Result<Frame, WireFormatError>) {
        // As the core: frames of a link still count while it closes, until the transport reports it closed.
        guard let current = link, machine.links.generation == current.generation else { return }
        let epochsBefore = Set(machine.ledger.delivered.map(\.epoch))
        defer { forgottenEpochs.formUnion(epochsBefore.subtracting(machine.ledger.delivered.map(\.epoch))) }
        switch result {
        case .failure(let failure): run(machine.malformed(current.generation, failure))
        case .success(let frame):
            let inflation = PayloadInflation(
                negotiated: false, maxFrameBytes: Frame.defaultMaxFrameBytes, maxInflationRatio: 64)
            run(machine.received(frame, on: current.generation, now: .now, inflate: inflation).actions)
        }
    }

    private mutating func linkClosed() {
        guard let current = link, machine.links.role(of: current.generation) != nil else { return }
        link = nil
        run(machine.closed(current.generation, error: nil, serverWindow: current.dedupeWindow))
    }

    private mutating func tick(received: Bool, sent: Bool) {
        // As the core, whose ticks start with the link's Welcome.
        guard let link, !machine.links.awaitsWelcome(link.generation) else { return }
        if received { machine.read(on: link.generation) }
        if sent { machine.wrote(on: link.generation) }
        run(machine.heartbeatTicked(link.generation, now: .now, interval: .seconds(1)))
    }

    private mutating func openGate(_ generation: UInt64) {
        // With a login step on even links and without one on odd ones, so that both resend rules
        // run (read from no input byte, so the corpus keeps its meaning).
        run(machine.openGate(generation, loggedIn: generation % 2 == 0) ?? [])
    }

    // MARK: Requests

    private mutating func request(idempotent: Bool, login: Bool, payloadBytes: Int) {
        nextRequestID += 1
        nextCaller += 1
        let caller = nextCaller
        waiting.insert(caller)
        let request = PendingRequest(
            id: nextRequestID, method: "m", payload: [UInt8](repeating: 0x2f, count: payloadBytes),
            deadline: .now + .seconds(3_600), idempotent: idempotent, bypassesGate: login,
            linkGeneration: link?.generation ?? 0)
        switch machine.admit(request, caller: caller, now: .now, session: 0, writable: { _ in true }) {
        case .refuse: resume(caller)
        case .queued: break
        case .write: write(request)
        }
    }

    /// As `ClientCore.write`: a request larger than the server accepts fails instead.
    private mutating func write(_ request: PendingRequest, resent: Bool = false) {
        guard let link else { return }
        if !request.bypassesGate {
            let last = lastWritten[link.generation] ?? 0
            check(request.id > last, "request \(request.id) written on link \(link.generation) after \(last), made later")
            lastWritten[link.generation] = request.id
        }
        if request.frame(at: .now, resent: resent).encodedSize > link.maxFrameBytes { finish(request.id) }
    }

    private mutating func drain(_ generation: UInt64) {
        while let (request, resent) = machine.dequeue(writingOn: generation, writable: true) {
            write(request, resent: resent)
        }
    }

    /// As `ClientCore.finish`.
    private mutating func finish(_ id: UInt64) {
        run(machine.finish(id, .success([])) ?? [])
    }

    private mutating func giveUp(_ id: UInt64?, cancelled: Bool) {
        guard let id else { return }
        run(cancelled ? machine.cancel(id) : machine.expire(id))
    }

    // MARK: Shutdown

    private mutating func shutdown() {
        if let unwritten = machine.beginShutdown() {
            fail(unwritten)
            if machine.shutdownIsIdle { completeShutdown() }
        } else {
            completeShutdown()
        }
    }

    private mutating func completeShutdown() {
        run(machine.completeShutdown())
    }

    private mutating func terminate() {
        guard machine.terminate(LongLinkError(code: .unauthenticated, message: "rejected")) else { return }
        fail(machine.removeAllRequests())
        if link != nil { close() }
        finishConsumers()
    }

    /// The fuzz input ended: whatever the state, a shutdown must hand every caller back.
    mutating func finish() {
        fail(machine.beginShutdown() ?? [])
        completeShutdown()
        linkClosed()
        check(waiting.isEmpty, "\(waiting.count) callers never resumed")
        check(machine.book.isEmpty, "requests left in the book after shutdown")
    }
}

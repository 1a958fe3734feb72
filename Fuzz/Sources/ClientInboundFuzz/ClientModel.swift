import FuzzKit
import LongLinkWire

@testable import LongLink

/// The client core's bookkeeping without its sockets, timers and tasks: the link machine, the
/// request book, push delivery and acks, driven the way `ClientCore` drives them, with each
/// caller a number so that the model can tell whether one is resumed twice or never.
struct ClientModel {
    var machine = LinkStateMachine()
    // Small bounds, so that short inputs reach them.
    var book = RequestBook<Int>(queueLimit: 6, queueByteLimit: 96)
    var pushes = PushLedger<Void>(holdLimit: 3, maxBatch: 3)
    var heartbeat = HeartbeatMonitor()

    /// The current link, as the core's `Link` object knows it.
    var link: Link?
    var nextGeneration: UInt64 = 0
    var nextRequestID: UInt64 = 0
    var nextCaller = 0
    /// Callers suspended on a request: admitted, not yet resumed.
    var waiting: Set<Int> = []

    var consumers: [UInt64: Consumer] = [:]
    var nextConsumerID: UInt64 = 0
    /// Every reliable push some consumer handed to the app.
    var takenByApp: Set<PushKey> = []
    /// Epochs whose de-duplicator ``PushLedger`` forgot (it keeps the last few): their repeats may
    /// be delivered again, as documented.
    var forgottenEpochs: Set<UInt64> = []

    struct Link {
        let generation: UInt64
        var welcome: Frame.Welcome?
        var maxFrameBytes = Frame.defaultMaxFrameBytes
        var maxInFlight = Int.max
        /// The transport was told to close it; its `linkClosed` may follow.
        var closing = false
    }

    struct Consumer {
        let topic: String?
        let limit: Int
        var buffer: [Push] = []
        /// Reliable pushes this consumer handed to the app: never one twice.
        var delivered: Set<PushKey> = []
    }

    mutating func handle(_ event: ClientEvent, _ input: inout FuzzInput) {
        switch event {
        case .connect: connect()
        case .frame: received(input.frame())
        case .loginSucceeded:
            if let link { openGate(link.generation) }
        case .request:
            request(idempotent: input.bool(), login: input.bool(), payloadBytes: input.int(below: 64))
        case .giveUp: giveUp(pick(from: book.entries.keys.sorted(), &input), cancelled: input.bool())
        case .linkClosed: linkClosed()
        case .tick: tick(received: input.bool(), sent: input.bool())
        case .addConsumer:
            let topics: [String?] = [nil, "a", "b"]
            addConsumer(topic: topics[input.int(below: topics.count)], limit: 1 + input.int(below: 4))
        case .take:
            take(from: pick(from: consumers.keys.sorted(), &input), count: 1 + input.int(below: 4))
        case .removeConsumer: removeConsumer(pick(from: consumers.keys.sorted(), &input))
        case .shutdown: shutdown()
        case .ackTimer: perform(pushes.ackTimerFired())
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

    // MARK: Link

    private mutating func connect() {
        guard link == nil else { return }
        nextGeneration += 1
        guard case .awaitWelcome = machine.attach(nextGeneration) else { return }
        link = Link(generation: nextGeneration)
        pushes.linkAttached(nextGeneration)
        heartbeat = HeartbeatMonitor()
    }

    /// As `ClientCore.close`: the transport closes and later reports ``linkClosed()``.
    private mutating func close() {
        guard let generation = link?.generation, machine.closeRequested(generation) else { return }
        link?.closing = true
    }

    private mutating func violate() {
        guard let generation = link?.generation, machine.closeRequested(generation) else { return }
        link?.closing = true
    }

    private mutating func received(_ result: Result<Frame, WireFormatError>) {
        // As the core: frames of a link still count while it closes, until the transport reports it closed.
        guard let current = link, machine.generation == current.generation else { return }
        let frame: Frame
        switch result {
        case .failure: return violate()
        case .success(let decoded): frame = decoded
        }
        guard current.welcome != nil else { return receivedFirst(frame, on: current.generation) }
        switch frame {
        case .response(let response): handleResponse(response)
        case .push(let push): handlePush(push)
        case .goAway(let goAway): handleGoAway(goAway)
        case .ping, .pong, .unrecognized: break
        case .hello, .welcome, .request, .cancel, .ack, .sync: violate()
        }
    }

    private mutating func receivedFirst(_ frame: Frame, on generation: UInt64) {
        switch frame {
        case .welcome(let welcome):
            switch machine.receivedWelcome(generation, version: welcome.version) {
            case .violation: violate()
            case .none: break
            case .completeHandshake:
                link?.welcome = welcome
                link?.maxFrameBytes = ServerBounds.maxFrameBytes(offered: welcome.maxFrameBytes)
                link?.maxInFlight = welcome.maxInFlight == 0 ? .max : Int(welcome.maxInFlight)
                _ = ServerBounds.heartbeat(offered: welcome.heartbeatMilliseconds, proposed: .seconds(10))
            }
        case .goAway(let goAway): handleGoAway(goAway)
        case .unrecognized: break
        default: violate()
        }
    }

    private mutating func handleGoAway(_ goAway: Frame.GoAway) {
        guard let generation = link?.generation else { return }
        _ = ServerBounds.retryAfter(milliseconds: goAway.retryAfterMilliseconds)
        let hasWritten = book.hasWritten(on: generation)
        switch machine.receivedGoAway(generation, goAway, hasWrittenRequests: hasWritten) {
        case .failHandshakeAndClose, .close: link?.closing = true
        case .waitForReplies, .none: break
        }
    }

    private mutating func linkClosed() {
        guard let current = link, let closed = machine.closed(current.generation, error: nil) else { return }
        link = nil
        pushes.linkClosed(current.generation)
        let settlement = book.linkEnded(
            current.generation, resendAllowed: closed.resendAllowed,
            serverWindow: (current.welcome?.dedupeWindowMilliseconds ?? 0) > 0, loggedIn: closed.loggedIn)
        fail(settlement.failed)
        if machine.shuttingDown { finishShutdownIfIdle() }
    }

    private mutating func tick(received: Bool, sent: Bool) {
        guard link?.welcome != nil else { return }
        if heartbeat.tick(receivedSinceLastTick: received, sentSinceLastTick: sent) == .declareDead { close() }
    }

    private mutating func openGate(_ generation: UInt64) {
        // With a login step on even links and without one on odd ones, so that both resend rules
        // run (read from no input byte, so the corpus keeps its meaning).
        guard case .sync(let openQueue) = machine.loginSucceeded(generation, loggedIn: generation % 2 == 0) else {
            return
        }
        perform(pushes.loginSynced(generation))
        if openQueue { drainQueue() }
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
        if machine.admissionError != nil { return resume(caller) }
        var route = machine.route(bypassesGate: login, generation: request.linkGeneration)
        if case .write = route, !login, let link, book.queuedCount > 0 || book.writtenCount >= link.maxInFlight {
            route = .queue
        }
        switch book.admit(request, caller: caller, route: route) {
        case .refuse: resume(caller)
        case .queued: break
        case .write: write(request)
        }
    }

    /// As `ClientCore.write`: a request larger than the server accepts fails instead.
    private mutating func write(_ request: PendingRequest, resent: Bool = false) {
        guard let link else { return }
        if request.frame(at: .now, resent: resent).encodedSize > link.maxFrameBytes { finish(request.id) }
    }

    private mutating func drainQueue() {
        while let link, machine.phase == .open(link.generation), book.writtenCount < link.maxInFlight,
            let (request, resent) = book.dequeue(writingOn: link.generation)
        {
            write(request, resent: resent)
        }
    }

    private mutating func finish(_ id: UInt64) {
        guard let entry = book.remove(id) else { return }
        resume(entry.caller)
        if machine.shuttingDown { finishShutdownIfIdle() }
        guard case .written(let generation) = entry.stage else { return }
        if book.queuedCount > 0, machine.phase == .open(generation), link?.generation == generation {
            drainQueue()
        } else if case .draining = machine.phase, !book.hasWritten(on: generation), machine.drained(generation) {
            link?.closing = true
        }
    }

    private mutating func handleResponse(_ response: Frame.Response) {
        guard let id = UInt64(response.requestID), let entry = book[id], case .written = entry.stage else { return }
        finish(id)
    }

    private mutating func giveUp(_ id: UInt64?, cancelled: Bool) {
        guard let id else { return }
        finish(id)
    }

    // MARK: Shutdown

    private mutating func shutdown() {
        if machine.beginShutdown() == .failUnwrittenAndWait {
            fail(book.removeUnwritten())
            finishShutdownIfIdle()
        } else {
            completeShutdown()
        }
    }

    private mutating func finishShutdownIfIdle() {
        guard machine.shuttingDown, book.isEmpty else { return }
        completeShutdown()
    }

    private mutating func completeShutdown() {
        fail(book.removeAll())
        switch machine.completeShutdown() {
        case .sayGoAwayAndClose(let flushAcks):
            if flushAcks { perform(pushes.flushAcks()) }
            link?.closing = true
        case .close: link?.closing = true
        case .none: break
        }
        finishConsumers()
    }

    private mutating func terminate() {
        guard machine.terminate(LongLinkError(code: .unauthenticated, message: "rejected")) else { return }
        fail(book.removeAll())
        if link != nil { close() }
        finishConsumers()
    }

    /// The fuzz input ended: whatever the state, a shutdown must hand every caller back.
    mutating func finish() {
        if !machine.shuttingDown { _ = machine.beginShutdown() }
        completeShutdown()
        linkClosed()
        check(waiting.isEmpty, "\(waiting.count) callers never resumed")
        check(book.isEmpty, "requests left in the book after shutdown")
    }
}

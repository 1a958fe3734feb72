import FuzzKit
import LongLinkWire

@testable import LongLinkServer

/// One server connection after another, without sockets, tasks or timers. Each waiter of the
/// de-duplication window is a number unique across connections, so that the model can tell
/// whether one is answered twice.
struct ServerModel {
    typealias Window = DedupeWindow<Int>
    typealias Session = ServerSessionStateMachine<Window.Run>

    static let configuration: Session.Configuration = {
        var configuration = ServerConfiguration()
        configuration.maxInFlightPerConnection = 4
        configuration.maxInflatedBytesPerConnection = maxInflatedBytes
        return Session.Configuration(configuration)
    }()
    /// Small, so that short inputs reach the budget of inflated bytes.
    static let maxInflatedBytes = 4_096
    var maxInflatedBytes: Int { Self.maxInflatedBytes }

    var session = Session(configuration: Self.configuration)
    var decoder = Self.makeDecoder()
    var partialFrame = PartialFrameWatch()
    var pushWindow = ReliablePushWindow(size: 3)
    var acks = Self.makeAckMerger()
    var dedupeClient = DedupeKey.Client("")
    /// The connection's number: its waiters are `connection << 32 | token`.
    var connection = 1

    // Small bounds, so that short inputs reach them.
    var window = Window(window: .seconds(1), capacity: 6, capacityPerClient: 3, origin: .now)
    /// The window's clock, in nanoseconds.
    var now: Int64 = 0
    /// Executions running, on this connection or orphaned by a closed one, with their key.
    var running: [Window.Run: DedupeKey] = [:]
    /// Waiters answered (or let go): none twice.
    var answered: Set<Int> = []
    /// The current connection's requests in flight, by id: their token and the key they were
    /// admitted under (a login may bind the connection to a principal while they run).
    var inFlight: [String: (token: UInt64, key: DedupeKey)] = [:]
    var partialTimerArmed = false
    var windowTimerArmed = false
    /// The principals' stores: the highest seq stored for each.
    var stored: [String: UInt64] = [:]

    static func makeDecoder() -> FrameDecoder {
        FrameDecoder(maxFrameBytes: 512, limits: Frame.DecodingLimits(maxMapEntries: 8, maxRepeatedValues: 16))
    }

    mutating func handle(_ event: ServerEvent, _ input: inout FuzzInput) {
        switch event {
        case .bytes: read(input.chunk())
        case .handlerFinished: handlerFinished(pick(running.keys.sorted { $0.generation < $1.generation }, &input))
        case .handlerTimedOut: handlerTimedOut(pick(inFlight.keys.sorted(), &input))
        case .bind:
            let principals = ["alice", "bob"]
            bind(principals[input.int(below: principals.count)])
        case .pump:
            if let principal = session.principal { stored[principal, default: 0] += UInt64(input.int(below: 8)) }
            pump()
        case .pushWindowTimer: pushWindowTimerFired()
        case .heartbeatTick:
            if case .closeConnection(let close) = session.heartbeatTick() { perform(close) }
        case .partialFrameTimer: partialFrameTimerFired(readingPaused: input.bool())
        case .goAway:
            switch session.goAwayRequested(Frame.GoAway(code: .unavailable, reason: "restart", reconnect: true)) {
            case .closeConnection(let close): perform(close)
            case .sendGoAwayAndDrain, .ignore: break
            }
        case .drainTimeout:
            if let close = session.drainTimedOut() { perform(close) }
        case .handshakeTimeout:
            if let close = session.handshakeTimedOut() { perform(close) }
        case .advanceClock: now += Int64(input.varint() % 4_000) * 1_000_000
        case .connectionClosed: connectionClosed()
        }
    }

    private func pick<T>(_ values: [T], _ input: inout FuzzInput) -> T? {
        values.isEmpty ? nil : values[input.int(below: values.count)]
    }

    func waiter(_ token: UInt64) -> Int { connection << 32 | Int(token) }

    mutating func answer(_ waiters: Window.Waiters) {
        for waiter in waiters { check(answered.insert(waiter).inserted, "waiter \(waiter) answered twice") }
    }

    // MARK: Bytes and frames

    private mutating func read(_ bytes: UnsafeRawBufferPointer) {
        guard session.phase != .closed else { return }
        session.receivedBytes()
        var frames: [Frame] = []
        var failure: WireFormatError?
        do { try decoder.decode(bytes, into: &frames) } catch { failure = error }
        for frame in frames where session.phase != .closed { handle(frame) }
        guard let failure else {
            if partialFrame.read(pendingBytes: decoder.bufferedByteCount, consumed: decoder.consumedByteCount) {
                partialTimerArmed = true
            }
            return
        }
        let code: StatusCode
        switch failure.kind {
        case .frameTooLarge, .tooManyElements: code = .resourceExhausted
        default: code = .invalidArgument
        }
        if let close = session.receivedMalformedBytes(code: code, reason: "\(failure)") { perform(close) }
    }

    private mutating func handle(_ frame: Frame) {
        switch frame {
        case .hello(let hello):
            switch session.receivedHello(hello) {
            case .sendWelcome(let heartbeat):
                check(heartbeat >= .milliseconds(50) && heartbeat <= .seconds(300), "heartbeat \(heartbeat) unclamped")
                dedupeClient = DedupeKey.Client(session.clientID)
            case .closeConnection(let close): perform(close)
            case .ignore: break
            }
        case .request(let request): received(request)
        case .cancel(let cancel): cancelled(cancel.requestID)
        case .ack(let ack):
            switch session.receivedAck(seqs: ack.seqs) {
            case .acknowledge(_, let seqs):
                let (current, call) = acks.received(seqs, epoch: ack.epoch)
                guard current else { break }
                storeCalls(from: call)
                if pushWindow.acknowledged(seqs) { pump() }
            case .closeConnection(let close): perform(close)
            case .ignore: break
            }
        case .sync:
            switch session.receivedSync() {
            case .resendReliablePushes:
                pushWindow.restart()
                pump()
            case .closeConnection(let close): perform(close)
            case .ignore: break
            }
        case .ping:
            if case .closeConnection(let close) = session.receivedPing() { perform(close) }
        case .goAway:
            if let close = session.receivedGoAway() { perform(close) }
        case .pong:
            if let close = session.receivedIgnorableFrame() { perform(close) }
        case .unrecognized: break
        case .welcome, .response, .push:
            if let close = session.receivedServerFrame() { perform(close) }
        }
    }
}

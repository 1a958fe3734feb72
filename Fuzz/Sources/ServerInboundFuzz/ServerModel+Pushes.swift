import FuzzKit
import LongLinkWire

@testable import LongLinkServer

extension ServerModel {
    /// A handler bound the connection to `principal`.
    mutating func bind(_ principal: String) {
        guard case .rebind = session.bound(principal: principal) else { return }
        dedupeClient = DedupeKey.Client(session.clientID, principal: principal)
        pushWindow.principalChanged()
        acks.principalChanged()
    }

    /// Small bounds, so that short inputs reach them; the model's store numbers in epoch 7.
    static func makeAckMerger() -> AckMerger { AckMerger(maxPerCall: 4, rememberLimit: 8) }

    /// Runs the store calls an `Ack` led to, each returning at once, failing for odd first seqs.
    mutating func storeCalls(from call: AckMerger.Call?) {
        var next = call
        while let call = next {
            check(!call.seqs.isEmpty && call.seqs.count <= acks.maxPerCall, "a store call of \(call.seqs.count) seqs")
            check(
                call.seqs.allSatisfy { $0 > acks.floor && $0 <= acks.highestSent }, "an Ack may delete seqs never sent")
            check(Set(call.seqs).count == call.seqs.count, "a store call repeats a seq")
            next = acks.callReturned(succeeded: call.seqs[0] % 2 == 0)
        }
        check(!acks.isCalling, "a store call left in flight")
    }

    /// As `ServerConnection.pumpReliablePushes`, over a store that holds seqs 1...stored.
    mutating func pump() {
        guard let principal = session.reliablePushPrincipal else { return }
        pushWindow.pumpStarted()
        let room = pushWindow.room
        guard room > 0 else {
            pushWindow.filled()
            if !windowTimerArmed {
                windowTimerArmed = true
                pushWindow.timerArmed()
            }
            return
        }
        let available = (stored[principal] ?? 0) - min(pushWindow.lastSentSeq, stored[principal] ?? 0)
        let count = Int(min(UInt64(room), available))
        guard count > 0 else { return }
        acks.sent(first: pushWindow.lastSentSeq + 1, last: pushWindow.lastSentSeq + UInt64(count), epoch: 7)
        pushWindow.sent(count: count, lastSeq: pushWindow.lastSentSeq + UInt64(count))
    }

    mutating func pushWindowTimerFired() {
        guard windowTimerArmed else { return }
        windowTimerArmed = false
        switch pushWindow.timerFired() {
        case .none: break
        case .rearm:
            windowTimerArmed = true
            pushWindow.timerArmed()
        case .reopen: pump()
        }
    }

    mutating func partialFrameTimerFired(readingPaused: Bool) {
        guard partialTimerArmed, session.phase != .closed else { return }
        partialTimerArmed = false
        let pending = decoder.bufferedByteCount
        switch partialFrame.fired(
            pendingBytes: pending, consumed: decoder.consumedByteCount, readingPaused: readingPaused)
        {
        case .none: break
        case .rearm: partialTimerArmed = true
        case .close:
            check(pending > 0, "closed for a partial frame that is not there")
            if let close = session.partialFrameTimedOut(after: .seconds(30)) { perform(close) }
        }
    }

    // MARK: Invariants

    func checkInvariants() {
        check(
            session.inFlightCount == inFlight.count,
            "\(session.inFlightCount) in flight, the model has \(inFlight.count)")
        if session.phase == .closed { check(inFlight.isEmpty, "a closed session holds requests") }
        if session.phase == .draining {
            check(session.inFlightCount > 0, "a draining session with nothing in flight did not close")
        }
        check(session.inFlightCount <= Self.configuration.maxInFlight, "over the in-flight limit")
        // Running entries count too: the budget holds them all.
        check(window.count <= window.limits.entries, "the window holds \(window.count) entries")
        check(window.storedBytes <= window.limits.bytes, "the window holds \(window.storedBytes) bytes")
        for run in running.keys { check(window.isRunning(run), "a running execution the window forgot") }
        check(pushWindow.outstanding <= pushWindow.size, "the push window opened beyond its size")
        check(pushWindow.lastSentSeq <= acks.highestSent, "the last seq sent is above the highest")
        check(
            acks.rememberedCount <= 2 * acks.rememberLimit + 5 * acks.maxPerCall,
            "the ack merger remembers \(acks.rememberedCount) seqs")
        check(acks.pending.count <= 4 * acks.maxPerCall, "the ack merger holds \(acks.pending.count) seqs")
        check(decoder.bufferedByteCount < decoder.maxFrameBytes + 10, "the decoder holds more than one frame")
        check(partialTimerArmed == (partialFrame.watchedOffset != nil), "the partial-frame timer and watch differ")
    }

    /// The input ended: the connection closes, and every execution finishes.
    mutating func finish() {
        connectionClosed()
        for run in running.keys.sorted(by: { $0.generation < $1.generation }) { handlerFinished(run) }
        check(running.isEmpty, "executions left running")
    }
}

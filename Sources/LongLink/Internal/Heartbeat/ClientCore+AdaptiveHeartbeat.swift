import Foundation
internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    // MARK: Adaptive heartbeat (HeartbeatPolicy.adaptive)

    /// The adaptive heartbeat's state, restored from the store on first use; nil with a fixed
    /// heartbeat. What the store held is logged, and a store that fails is a fresh start.
    func adaptiveHeartbeat() -> AdaptiveHeartbeatState? {
        if let state = machine.supervision.adaptiveHeartbeat { return state }
        guard let parameters = configuration.heartbeatPolicy.adaptive else { return nil }
        var learner = HeartbeatLearner(parameters: parameters)
        if let store = configuration.heartbeatStore {
            let (restored, outcome) = HeartbeatLearner.restoring(
                parameters, from: store, now: clock.now, wallNow: Date())
            learner = restored
            switch outcome {
            case .empty: break
            case .restored(let count): log(.info, "adaptive heartbeat: restored what \(count) networks taught")
            case .ignored(let error): log(.warning, "adaptive heartbeat: \(error); learning afresh")
            }
        }
        let state = AdaptiveHeartbeatState(learner: learner, network: configuration.network)
        machine.supervision.adaptiveHeartbeat = state
        return state
    }

    /// The interval the next `Hello` proposes: the learned one for the network, or the fixed one.
    var proposedHeartbeat: Duration {
        guard let state = adaptiveHeartbeat() else { return configuration.heartbeat }
        return state.learner.interval(for: state.network)
    }

    /// A link adopted its `Welcome` after proposing `proposed`: what it shows counts for the learned
    /// interval only when the server took the proposal as it was.
    func adoptedHeartbeat(_ link: Link, proposed: Duration) {
        guard adaptiveHeartbeat() != nil else { return }
        link.learnedInterval = link.heartbeat == proposed ? proposed : nil
    }

    /// A heartbeat tick ran on `link` (the `Ping` before it: `pingedBefore`). Adaptive: a `Ping` it
    /// sent after a whole interval with no traffic either way tests the NAT, and its answer is an
    /// interval survived (the machine made it a probe, answered within the answer timeout).
    func heartbeatTicked(_ link: Link, pingedBefore: UInt64?) {
        guard configuration.heartbeatPolicy.adaptive != nil, link.learnedInterval != nil,
            let nonce = machine.pings[link.generation]?.nonce, nonce != pingedBefore,
            machine.isIdle(link.generation)
        else { return }
        link.idlePing = nonce
    }

    /// A request was written on `link`. Adaptive: it is watched for an answer
    /// (``ClientStateMachine/requestWritten(on:now:timeout:)``).
    func requestWritten(on link: Link) {
        guard let parameters = configuration.heartbeatPolicy.adaptive, link.generation == self.link?.generation
        else { return }
        run(machine.requestWritten(on: link.generation, now: clock.now, timeout: parameters.answerTimeout))
    }

    /// The answer watch after a request timed out on the link of `generation`.
    func answerTimedOut(_ generation: UInt64) {
        guard let parameters = configuration.heartbeatPolicy.adaptive, let link, link.generation == generation
        else { return }
        run(
            machine.answerTimedOut(
                generation, now: clock.now, timeout: parameters.answerTimeout, ended: machine.hasEnded(link.generation)))
    }

    /// Proposes `interval` on the live link (`Ping.heartbeat_ms`); it is in force once the `Pong` says so.
    func proposeHeartbeat(_ interval: Duration, on link: Link) {
        let nonce = Self.randomNonce()
        link.proposal = (nonce, interval)
        send(.ping(Frame.Ping(nonce: nonce, heartbeatMilliseconds: interval.wireMilliseconds)), on: link)
    }

    /// A `Pong` on the current link: it may take a proposal (the interval the server now enforces)
    /// or answer an idle `Ping` (an interval survived: the learner may step up, proposed at once).
    func heartbeatPong(_ pong: Frame.Pong, on link: Link) {
        guard var state = machine.supervision.adaptiveHeartbeat else { return }
        if let proposal = link.proposal, proposal.nonce == pong.nonce {
            link.proposal = nil
            // 0: a server that does not know the field; the interval stays until the next connect.
            if pong.heartbeatMilliseconds > 0 {
                link.heartbeat = ServerBounds.heartbeat(offered: pong.heartbeatMilliseconds, proposed: proposal.interval)
                link.learnedInterval = link.heartbeat == proposal.interval ? proposal.interval : nil
                log(.info, "adaptive heartbeat: \(link.heartbeat) in force on \(state.network)")
            }
        }
        guard let idlePing = link.idlePing, idlePing == pong.nonce, let interval = link.learnedInterval else { return }
        link.idlePing = nil
        let next = state.learner.survived(interval, on: state.network, at: clock.now)
        machine.supervision.adaptiveHeartbeat = state
        guard let next else { return }
        log(.info, "adaptive heartbeat: \(interval) survived on \(state.network); probing \(next)")
        saveLearnedHeartbeat()
        proposeHeartbeat(next, on: link)
    }

    /// A link ended with `error`: when its idle `Ping` was still waiting, the NAT forgot the mapping
    /// (or the network went), which answers the probe; the supervisor replaces the link at once.
    func heartbeatLinkLost(_ link: Link, error: LongLinkError?) {
        guard error != nil, link.idlePing != nil, let interval = link.learnedInterval,
            var state = machine.supervision.adaptiveHeartbeat
        else { return }
        link.idlePing = nil
        state.lostDuringProbe = state.learner.isProbing(state.network)
        let next = state.learner.idleLinkDied(interval, on: state.network, at: clock.now)
        machine.supervision.adaptiveHeartbeat = state
        log(
            .info,
            "adaptive heartbeat: an idle link died at \(interval) on \(state.network)"
                + (next.map { "; back to \($0)" } ?? ""))
        saveLearnedHeartbeat()
    }

    /// Whether the last link was lost answering a probe; reading it clears it.
    func takeLostDuringProbe() -> Bool {
        guard machine.supervision.adaptiveHeartbeat?.lostDuringProbe == true else { return false }
        machine.supervision.adaptiveHeartbeat?.lostDuringProbe = false
        return true
    }

    /// The app says the client is on `network` now: its learned interval is proposed on the live link.
    func setNetwork(_ network: NetworkKey) {
        guard var state = adaptiveHeartbeat(), state.network != network else { return }
        state.network = network
        machine.supervision.adaptiveHeartbeat = state
        guard let link = liveLink, machine.links.isEstablished(link.generation) else { return }
        link.idlePing = nil
        link.learnedInterval = nil
        proposeHeartbeat(state.learner.interval(for: network), on: link)
    }

    /// What was learned, for the app (nil with a fixed heartbeat).
    var learnedHeartbeat: HeartbeatSnapshot? {
        adaptiveHeartbeat()?.learner.snapshot(now: clock.now, wallNow: Date())
    }

    /// The current link's heartbeat interval, once it is established.
    var heartbeatInForce: Duration? {
        guard let link = liveLink, machine.links.isEstablished(link.generation) else { return nil }
        return link.heartbeat
    }

    private func saveLearnedHeartbeat() {
        guard let store = configuration.heartbeatStore, let snapshot = learnedHeartbeat else { return }
        do {
            try store.save(snapshot)
        } catch {
            log(.warning, "adaptive heartbeat: \(error)")
        }
    }
}

internal import LongLinkTransport
internal import LongLinkWire

/// The supervising loop behind ``LongLinkClient/run()``: choose endpoints, race a connection, log
/// in, replay subscriptions, `Sync`, open the queue, watch the link (re-probing the others and
/// migrating to a clearly better one), back off when it ends, repeat; after a session's end for good,
/// wait for the app's next login when the configuration says so (`+Relogin`).
struct Supervisor {
    let core: ClientCore
    /// The client's configuration, with the login step of the current session (`+Relogin`).
    var configuration: ClientConfiguration
    let directory: EndpointDirectory
    let makeRequestID: @Sendable () -> UInt64
    /// The TLS context of every connection; nil for plain TCP.
    let tls: TLSContext?

    enum Cycle {
        /// A link was up (for `connectedFor`) and ended.
        case ended(LinkEnd, endpoint: Endpoint, connectedFor: Duration)
        /// Connecting, the handshake or the login failed; worth another try.
        case failed(LongLinkError)
        /// Stop for good.
        case terminal(LongLinkError)
    }

    var balancing: Balancing { configuration.balancing }

    /// One session: connects, logs in and reconnects until a shutdown or the session's end for good.
    /// Returns why the last link was lost or the last attempt failed (nil when none was).
    func superviseSession() async -> DisconnectCause? {
        var failures = 0
        // Every state until the next link says it (``ConnectionState/cause``).
        var cause: DisconnectCause?
        while await !core.isStopping {
            if await core.pausesReconnection {
                await core.setState(
                    ConnectionState(phase: .waitingToReconnect, reason: "paused in the background", cause: cause))
                if await core.waitToRetry(nil) == .shutdown { break }
                continue
            }
            let changes = await directory.noteChanges(core.supervisedChanges)
            if await directory.refreshIfDue(networkChanged: changes.network) { await prepare(refreshing: false) }
            let candidates = Array(await directory.ranking().prefix(balancing.raceWidth))
            var retryAfter: Duration?
            var shown = candidates.first
            // Why the link ended, when it ended with an error (a reset, truncation): shown with the wait.
            var endError: LongLinkError?
            let cycle = await connectAndServe(candidates, attempt: failures, cause: cause)
            // The next link's login starts its own chain: an answer for this one is ignored.
            await core.credentialLinkEnded()
            switch cycle {
            case .terminal(let error):
                cause = DisconnectCause(.closed(error))
                await core.terminate(error)
            case .failed(let error):
                failures += 1
                let failure = DisconnectCause(.closed(error))
                cause = failure
                await core.setState(
                    ConnectionState(
                        phase: .connecting, endpoint: shown, reason: "attempt failed: \(failure)", error: error,
                        cause: failure))
            case .ended(let end, let endpoint, let connectedFor):
                shown = endpoint
                cause = DisconnectCause(end)
                if connectedFor >= configuration.backoff.resetAfter { failures = 0 }
                switch end {
                case .shutdown, .migrated:
                    break
                case .goAway(let goAway) where !goAway.reconnect:
                    await core.terminate(
                        LongLinkError(
                            code: .goAway,
                            message: "the server closed the session for good (\(goAway.code)): \(goAway.reason)"))
                case .goAway(let goAway):
                    // A credential that expired (see Protocol.md): the state says why; the next
                    // login asks the provider for a new one.
                    if goAway.code == .unauthenticated {
                        endError = LongLinkError(code: .unauthenticated, message: goAway.reason)
                    }
                    // Draining or restarting: come back after its retry-after, elsewhere if we can.
                    let aside = await directory.setAside(endpoint, after: goAway)
                    // Plus jitter up to the first backoff step, so that a draining server's clients do not
                    // all come back in the same millisecond.
                    if goAway.retryAfterMilliseconds > 0, await directory.endpoints.count == 1 {
                        retryAfter = aside + configuration.backoff.delay(forAttempt: 0, random: .random(in: 0...1))
                    }
                case .closed(let error):
                    endError = error
                    // An idle link lost answering a heartbeat probe is replaced at once: the probe found
                    // the NAT's limit, which is not an outage.
                    if await core.takeLostDuringProbe() { retryAfter = .zero }
                    configuration.logger?(
                        LogRecord(
                            bounded: .info, "link to \(endpoint) ended: \(error.map { "\($0)" } ?? "closed")",
                            metadata: ["endpoint": "\(endpoint)"]))
                }
                failures += 1
            }
            if await core.isStopping { break }
            let delay =
                retryAfter ?? configuration.backoff.delay(forAttempt: max(0, failures - 1), random: .random(in: 0...1))
            await core.setState(
                ConnectionState(
                    phase: .waitingToReconnect, endpoint: shown, reason: cause.map { "\($0)" } ?? "link down",
                    error: endError, retryDelay: delay, cause: cause))
            switch await core.waitToRetry(delay) {
            case .shutdown: break
            case .networkChanged: failures = 0
            case .timer: continue
            }
        }
        return cause
    }

    /// Asks the provider for the list (when there is one and `refreshing`) and probes the endpoints
    /// (when there is more than one to choose from).
    func prepare(refreshing: Bool) async {
        if refreshing { await directory.refresh() }
        let endpoints = await directory.endpoints
        await core.setHasAlternatives(endpoints.count > 1)
        guard endpoints.count > 1 else { return }
        let report = await directory.probe()
        for probe in report.probes {
            configuration.logger?(
                LogRecord(
                    bounded: .debug,
                    "probe \(probe.endpoint): \(probe.state)"
                        + (probe.cost.map { ", cost \(Int(($0 * 1_000_000).rounded())) us" } ?? ""),
                    metadata: ["endpoint": "\(probe.endpoint)"]))
        }
    }

    /// Races the candidates, then serves on the winner until its link ends.
    private func connectAndServe(_ candidates: [Endpoint], attempt: Int, cause: DisconnectCause?) async -> Cycle {
        await core.setState(
            ConnectionState(
                phase: .connecting, endpoint: candidates.first, reason: attempt == 0 ? "connecting" : "reconnecting",
                cause: cause))
        let outcome = await race(candidates)
        guard let (endpoint, pending) = outcome.winner else {
            return .failed(
                outcome.failures.last?.error
                    ?? LongLinkError(code: .unavailable, message: "no endpoint to connect to"))
        }
        return await serve(pending, endpoint: endpoint)
    }

    /// The connect race over `candidates`; failures are recorded and logged.
    func race(_ candidates: [Endpoint]) async -> ConnectRace.Outcome<PendingLink> {
        let hello = await core.currentHello
        let options = configuration.connectionOptions
        let timeout = configuration.connectTimeout
        let maxFrameBytes = configuration.maxFrameBytes
        let clock = core.clock
        let loop = core.loop
        let logger = configuration.logger
        let tls = self.tls
        let outcome = await ConnectRace.run(
            candidates, stagger: balancing.raceStagger, clock: clock, loop: loop,
            attempt: { endpoint throws(LongLinkError) in
                try await PendingLink.open(
                    endpoint, hello: hello, options: options, timeout: timeout, maxFrameBytes: maxFrameBytes,
                    tls: tls, clock: clock, on: loop, logger: logger)
            },
            discard: { $0.close(error: nil) })
        for (endpoint, error) in outcome.failures {
            await directory.recordFailure(endpoint)
            await core.countFailedConnect()
            configuration.logger?(
                LogRecord(
                    bounded: .warning, "connecting to \(endpoint) failed: \(error)",
                    metadata: ["endpoint": "\(endpoint)", "code": "\(error.code)"]))
        }
        return outcome
    }

    /// Runs the session's login step, if it has one, and replays the subscriptions on the link of
    /// `generation`. Returns true when a login step ran: only then does the server de-duplicate
    /// what goes out on the link next (it binds a principal in a login, and de-duplicates nothing
    /// made before one).
    func login(_ generation: UInt64, server: ServerInfo?) async throws -> Bool {
        guard let server else {
            throw LongLinkError(code: .connectionLost, message: "the link dropped before login")
        }
        let session = LoginSession(
            core: core, generation: generation, configuration: configuration, makeRequestID: makeRequestID,
            server: server)
        if let login = configuration.login {
            try await login(session)
        }
        try await replaySubscriptions(on: generation)
        return configuration.login != nil
    }

    static func wrap(_ error: any Error) -> LongLinkError {
        if let error = error as? LongLinkError { return error }
        if error is CancellationError { return LongLinkError(code: .cancelled, message: "cancelled") }
        return LongLinkError(code: .unknown, message: "\(type(of: error)): \(error)", underlying: nil)
    }
}

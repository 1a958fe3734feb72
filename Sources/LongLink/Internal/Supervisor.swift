internal import LongLinkTransport
internal import LongLinkWire

/// The supervising loop behind ``LongLinkClient/run()``: connect, handshake, log in, replay
/// subscriptions, `Sync`, open the queue, wait for the link to end, back off, repeat.
struct Supervisor {
    let core: ClientCore
    let configuration: ClientConfiguration
    let makeRequestID: @Sendable () -> UInt64
    /// The TLS context of every connection; nil for plain TCP.
    let tls: TLSContext?

    private enum Cycle {
        /// A link was up (for `connectedFor`) and ended.
        case ended(LinkEnd, connectedFor: Duration)
        /// Connecting, the handshake or the login failed; worth another try.
        case failed(LongLinkError)
        /// Stop for good.
        case terminal(LongLinkError)
    }

    func run() async throws {
        var failures = 0
        var endpointIndex = 0
        while await !core.isStopping {
            if await core.pausesReconnection {
                await core.setState(ConnectionState(phase: .waitingToReconnect, reason: "paused in the background"))
                if await core.waitToRetry(nil) == .shutdown { break }
                continue
            }
            let endpoints = await currentEndpoints()
            let endpoint = endpoints[endpointIndex % endpoints.count]
            var retryAfter: Duration?
            switch await cycle(endpoint, attempt: failures) {
            case .terminal(let error):
                await core.terminate(error)
            case .failed(let error):
                configuration.logger?(
                    LogRecord(
                        bounded: .warning, "connecting to \(endpoint) failed: \(error)",
                        metadata: ["endpoint": "\(endpoint)", "code": "\(error.code)"]))
                failures += 1
                endpointIndex += 1
                await core.setState(
                    ConnectionState(phase: .connecting, endpoint: endpoint, reason: "attempt failed", error: error))
            case .ended(let end, let connectedFor):
                if connectedFor >= configuration.backoff.resetAfter { failures = 0 }
                switch end {
                case .shutdown:
                    break
                case .goAway(let goAway) where !goAway.reconnect:
                    await core.terminate(
                        LongLinkError(
                            code: .goAway,
                            message: "the server closed the session for good (\(goAway.code)): \(goAway.reason)"))
                case .goAway(let goAway):
                    // Draining or restarting: come back after its retry-after, elsewhere if we can.
                    endpointIndex += 1
                    // Plus jitter up to the first backoff step, so that a draining server's clients do not
                    // all come back in the same millisecond.
                    if goAway.retryAfterMilliseconds > 0 {
                        retryAfter =
                            ServerBounds.retryAfter(milliseconds: goAway.retryAfterMilliseconds)
                            + configuration.backoff.delay(forAttempt: 0, random: .random(in: 0...1))
                    }
                case .closed(let error):
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
                ConnectionState(phase: .waitingToReconnect, endpoint: endpoint, reason: "link down", retryDelay: delay))
            switch await core.waitToRetry(delay) {
            case .shutdown: break
            case .networkChanged: failures = 0
            case .timer: continue
            }
        }
        let terminal = await core.terminal
        await core.stopped(
            ConnectionState(
                phase: .stopped, reason: terminal.map { "stopped: \($0.message)" } ?? "shut down", error: terminal))
        if let terminal { throw terminal }
    }

    private func cycle(_ endpoint: Endpoint, attempt: Int) async -> Cycle {
        await core.setState(
            ConnectionState(
                phase: .connecting, endpoint: endpoint, reason: attempt == 0 ? "connecting" : "reconnecting"))
        var options = configuration.connectionOptions
        options.connectTimeout = configuration.connectTimeout
        let generation: UInt64
        do {
            let connection = try await Connection.connect(to: endpoint, options: options, tls: tls, on: core.loop)
            generation = try await core.attach(connection, endpoint: endpoint)
        } catch {
            return .failed(Self.wrap(error))
        }
        await core.clearPendingWake()
        await core.setState(
            ConnectionState(phase: .loggingIn, endpoint: endpoint, reason: "handshake done; logging in"))
        do {
            try await login(generation)
        } catch {
            let error = Self.wrap(error)
            if error.code == .unauthenticated {
                return .terminal(
                    LongLinkError(
                        code: .unauthenticated, message: "login rejected: \(error.message)", underlying: error))
            }
            await core.closeLink(generation, error: error)
            _ = await core.waitForEnd(generation)
            return .failed(error)
        }
        await core.openGate(generation)
        let serverID = await core.welcome?.serverID ?? "?"
        await core.setState(
            ConnectionState(phase: .connected, endpoint: endpoint, reason: "logged in to server \(serverID)"))
        let connectedAt = configuration.clock.now
        let end = await core.waitForEnd(generation)
        return .ended(end, connectedFor: configuration.clock.now - connectedAt)
    }

    private func login(_ generation: UInt64) async throws {
        guard let server = await core.serverInfo else {
            throw LongLinkError(code: .connectionLost, message: "the link dropped before login")
        }
        let session = LoginSession(
            core: core, generation: generation, configuration: configuration, makeRequestID: makeRequestID,
            server: server)
        if let login = configuration.login {
            try await login(session)
        }
        for subscription in configuration.subscriptions {
            _ = try await session.request(subscription.method, payload: subscription.payload)
        }
    }

    private func currentEndpoints() async -> [Endpoint] {
        guard let provider = configuration.endpointProvider else { return configuration.endpoints }
        do {
            let provided = try await provider()
            if !provided.isEmpty { return provided }
        } catch {
            configuration.logger?(LogRecord(bounded: .warning, "the endpoint provider failed: \(error)"))
        }
        return configuration.endpoints.isEmpty ? [.tcp(host: "127.0.0.1", port: 0)] : configuration.endpoints
    }

    static func wrap(_ error: any Error) -> LongLinkError {
        if let error = error as? LongLinkError { return error }
        if error is CancellationError { return LongLinkError(code: .cancelled, message: "cancelled") }
        return LongLinkError(code: .unknown, message: "\(type(of: error)): \(error)", underlying: nil)
    }
}

internal import LongLinkTransport
internal import LongLinkWire

extension Supervisor {
    /// Logs in on the race's winner and serves until its link ends, re-probing the other endpoints
    /// meanwhile and migrating when the ``MigrationDecider`` says so.
    func serve(_ pending: PendingLink, endpoint first: Endpoint) async -> Cycle {
        let generation: UInt64
        do {
            generation = try await core.attach(pending)
        } catch {
            await directory.recordFailure(first)
            return .failed(error)
        }
        await directory.recordSuccess(first, loadPermille: await core.serverInfo?.loadPermille ?? 0)
        await core.clearPendingWake()
        await core.setState(ConnectionState(phase: .loggingIn, endpoint: first, reason: "handshake done; logging in"))
        let loggedIn: Bool
        do {
            loggedIn = try await login(generation, server: await core.serverInfo)
        } catch {
            let error = Self.wrap(error)
            if error.code == .unauthenticated {
                return .terminal(
                    LongLinkError(
                        code: .unauthenticated, message: "login rejected: \(error.message)", underlying: error))
            }
            await core.closeLink(generation, error: error)
            _ = await core.waitForEnd(generation)
            await directory.recordFailure(first)
            return .failed(error)
        }
        // Read before the gate opens: a caller whose request goes out on this link then never sees
        // a clock earlier than the rhythm's start (a manual clock advanced between the two would
        // shift every re-probe by its step).
        let connectedAt = configuration.clock.now
        await core.openGate(generation, loggedIn: loggedIn)
        await core.credentialLoggedIn(generation: generation)
        await announce(first, reason: "logged in to server")
        var current = (generation: generation, endpoint: first)
        var decider = MigrationDecider(policy: balancing.migration)
        // Re-probes keep a fixed rhythm from the connect, whatever each one takes.
        let interval = balancing.migration.reprobeInterval
        var reprobeAt = interval.map { connectedAt.advanced(by: $0) }
        // A server full already in its Welcome is left at once, as after a Pong saying so.
        var welcomeLoad = await core.serverInfo?.loadPermille ?? 0
        while true {
            let probing = await reprobes()
            let wakeAt = [probing ? reprobeAt : nil, await directory.nextRefresh].compactMap { $0 }.min()
            let target: Endpoint?
            let wait: LinkWait
            if await core.leavesAt(welcomeLoad) {
                wait = .overloaded(welcomeLoad)
            } else {
                // A change the supervisor missed while busy (connecting, migrating) ends the wait at once.
                wait = await core.waitForEnd(current.generation, wakeAt: wakeAt, seen: directory.seen)
            }
            welcomeLoad = 0
            switch wait {
            case .ended(let end):
                return .ended(end, endpoint: current.endpoint, connectedFor: configuration.clock.now - connectedAt)
            case .overloaded(let load):
                await directory.record(current.endpoint, roundTrip: nil, loadPermille: load)
                // The server says it is full: leave it whatever the costs, but only for one that is
                // not full itself, or two full servers would trade the client back and forth.
                let leaveAt = balancing.migration.leaveAtLoadPermille
                target = await directory.bestAlternative(to: current.endpoint, loadBelow: leaveAt)?.endpoint
                configuration.logger?(
                    LogRecord(bounded: .info, "server \(current.endpoint) reports load \(load)‰: leaving it"))
            case .goingAway(let goAway):
                await directory.setAside(current.endpoint, after: goAway)
                target = await directory.ranking().first { $0 != current.endpoint }
            case .reprobe:
                // The rhythm's turn, the refresh interval, a network change or a new list.
                let now = configuration.clock.now
                let changes = await directory.noteChanges(core.supervisedChanges)
                var probeNow = changes.network
                if let due = reprobeAt, let interval, probing, now >= due {
                    probeNow = true
                    reprobeAt = max(due, now - interval).advanced(by: interval)
                }
                target = await reprobe(
                    current.endpoint, probing: probeNow, networkChanged: changes.network, decider: &decider)
            }
            guard let target, let moved = await migrate(to: target) else { continue }
            decider.moved(at: configuration.clock.now, random: .random(in: 0...1))
            current = (moved, target)
            await announce(target, reason: "migrated to server")
            welcomeLoad = await core.serverInfo?.loadPermille ?? 0
        }
    }

    private func announce(_ endpoint: Endpoint, reason: String) async {
        let serverID = await core.welcome?.serverID ?? "?"
        await core.setState(ConnectionState(phase: .connected, endpoint: endpoint, reason: "\(reason) \(serverID)"))
    }

    /// Whether the other endpoints are re-probed now.
    private func reprobes() async -> Bool {
        guard balancing.migration.reprobeInterval != nil, await directory.endpoints.count > 1 else { return false }
        guard balancing.migration.pausesOnExpensiveNetwork else { return true }
        return await !core.networkIsExpensive
    }

    /// Refreshes the list when due; when `probing`, probes every endpoint (the current one too, so
    /// that costs compare like with like) and asks the decider. A current endpoint that left the
    /// list is left at once.
    private func reprobe(
        _ current: Endpoint, probing: Bool, networkChanged: Bool, decider: inout MigrationDecider
    ) async -> Endpoint? {
        _ = await directory.refreshIfDue(networkChanged: networkChanged)
        let endpoints = await directory.endpoints
        await core.setHasAlternatives(endpoints.count > 1)
        guard endpoints.contains(current) else {
            if endpoints.count > 1 { _ = await directory.probe() }
            decider.reset()
            return await directory.ranking().first
        }
        guard probing, endpoints.count > 1 else { return nil }
        _ = await directory.probe()
        let best = await directory.bestAlternative(to: current)
        return decider.observe(
            currentCost: await directory.cost(current), best: best, at: configuration.clock.now)
    }

    /// Make before break: connects to `target`, logs in there, then moves the requests to it while
    /// the old link answers what was written on it. Returns the new link's generation, or nil
    /// when the new link could not be made (the old one goes on).
    private func migrate(to target: Endpoint) async -> UInt64? {
        let outcome = await race([target])
        guard let (_, pending) = outcome.winner else { return nil }
        let generation: UInt64
        let loggedIn: Bool
        do {
            generation = try await core.attachSuccessor(pending)
            loggedIn = try await login(generation, server: await core.successorInfo(generation))
        } catch {
            let error = Self.wrap(error)
            configuration.logger?(
                LogRecord(
                    bounded: .warning, "migration to \(target) failed: \(error)", metadata: ["endpoint": "\(target)"]))
            await directory.recordFailure(target)
            return nil
        }
        guard await core.completeMigration(generation, loggedIn: loggedIn) else {
            await core.closeLink(generation, error: LongLinkError(code: .cancelled, message: "migration abandoned"))
            return nil
        }
        await core.credentialLoggedIn(generation: generation)
        await directory.recordSuccess(target, loadPermille: await core.serverInfo?.loadPermille ?? 0)
        return generation
    }
}

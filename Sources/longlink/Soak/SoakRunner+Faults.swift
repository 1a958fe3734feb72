import LongLinkCore
import LongLinkServer
import LongLinkTesting
import LongLinkTransport

extension SoakRunner {
    private enum Step {
        case network(NetworkFault, hold: Duration?, String)
        /// Forward nothing in a direction for `hold`, then cut the connections that lived through it.
        case blackHole(FaultProxy.Direction, hold: Duration, String)
        case restartServer
        /// Crash the client's server, and start it again after the hold (fleets only).
        case crashServer(hold: Duration)
        case goAway
        case refuseAndCut(Duration)
        /// Kill the Redis Cluster primary of the principal's slot (fleets on a cluster only).
        case killPrimary
        /// End the session for good, as "logged in elsewhere" does (the app logs in again).
        case kickForGood
        /// Let the credential expire: the provider refuses until it has.
        case expireCredential
    }

    /// The faults, in a cycle of about 50 seconds (a fleet's: about 60) repeated until `end`.
    /// Network faults and GoAways hit the path to the server the client is on.
    static func injectFaults(
        until end: Duration, start: ContinuousClock.Instant, servers: SoakServers, credentials: SoakCredentials?,
        ledger: Locked<SoakLedger>,
        onEvent: @escaping @Sendable (SoakEvent) -> Void
    ) async {
        let clock = ContinuousClock()
        var cycle: [(Duration, Step)] = [
            (.seconds(3), .network(.cut, hold: nil, "cut both sides")),
            (.seconds(4), .network(.reset, hold: nil, "reset both sides")),
            (.seconds(4), .blackHole(.both, hold: .milliseconds(1_500), "black hole for 1.5 s")),
            (.seconds(3), .network(.splitWrites(into: 1), hold: .seconds(3), "one-byte writes for 3 s")),
            (
                .seconds(4),
                .network(
                    .latency(.milliseconds(250), jitter: .milliseconds(50)), hold: .seconds(3),
                    "latency 250±50 ms for 3 s")
            ),
            (.seconds(4), .restartServer),
            (.seconds(5), .goAway),
            (.seconds(4), .refuseAndCut(.seconds(2))),
            (.seconds(4), .blackHole(.upstream, hold: .seconds(1), "upstream black hole for 1 s")),
            (
                .seconds(4),
                .network(.mergeWrites(window: .milliseconds(20)), hold: .seconds(2), "merged writes for 2 s")
            ),
            // Shorter than the gaps between pushes: each link's mapping is forgotten soon after it is made,
            // silently, so only the heartbeat finds it; one forgotten as the NAT ends stays dead until then.
            (
                .seconds(4),
                .network(
                    .natIdleTimeout(.milliseconds(40), onForgotten: .drop), hold: .seconds(2),
                    "NAT forgetting mappings idle for 40 ms (dropping) for 2 s")
            ),
        ]
        if servers.isFleet || servers.child != nil {
            // Early in the cycle, so that short runs see a crash too, and once more later.
            cycle.insert((.seconds(3), .crashServer(hold: .seconds(3))), at: 1)
            cycle.insert((.seconds(4), .crashServer(hold: .seconds(2))), at: 8)
        }
        if credentials != nil {
            // Early, so that short runs see both: a kick for good needs a server of this process.
            cycle.insert((.seconds(3), .expireCredential), at: 1)
            if servers.child == nil { cycle.insert((.seconds(3), .kickForGood), at: 1) }
        }
        if servers.killPrimary != nil {
            // Before the first crash, so that short runs see a failover too.
            cycle.insert((.seconds(3), .killPrimary), at: 1)
        }
        func elapsed() -> Duration { clock.now - start }
        func record(_ text: String) {
            ledger.withLock { $0.faultInjected(at: elapsed()) }
            onEvent(.fault(text))
        }
        var index = 0
        while true {
            let (gap, step) = cycle[index % cycle.count]
            index += 1
            guard elapsed() + gap < end else { return }
            do { try await Task.sleep(for: gap) } catch { return }
            let target = servers.clientServer
            let proxy = servers.proxies[target]
            let name = servers.isFleet ? " (server \(target))" : ""
            let child = servers.child
            switch step {
            case .network(let fault, let hold, let text):
                await proxy.apply(fault)
                record(text + name)
                if let hold, let reversal = fault.reversal {
                    try? await Task.sleep(for: min(hold, max(.zero, end - elapsed())))
                    await proxy.apply(reversal)
                    onEvent(.fault("undo: \(text)\(name)"))
                }
            case .blackHole(let direction, let hold, let text):
                // The proxy discards what a black hole swallows while the sockets stay open; a link
                // that lived through one and carried on would deliver a stream with a hole in it,
                // which TCP never does (it delivers every byte or the connection dies). So the hole
                // lasts its whole hold, long past the client's heartbeat, and ends by cutting what
                // is still open before forwarding again: no black hole is cut short by the run's end.
                guard elapsed() + hold < end else { continue }
                await proxy.apply(.blackHole(direction))
                record(text + name)
                try? await Task.sleep(for: hold)
                await proxy.apply(.cut)
                await proxy.apply(.restoreForwarding(direction))
                onEvent(.fault("undo: \(text)\(name), cutting the links that lived through it"))
            case .restartServer:
                record("server restart" + name)
                if let child {
                    await child.stop()
                    do { try await child.start() } catch { onEvent(.fault("the server did not restart: \(error)")) }
                } else {
                    _ = try? await servers.members[target].restart(.graceful)
                }
            case .crashServer(let hold):
                record(
                    child == nil
                        ? "crash the client's server\(name), restart it in \(hold)"
                        : "kill -9 the server, restart it on its data directory in \(hold)")
                let crashed = await servers.crashClientServer()
                try? await Task.sleep(for: hold)
                // A failed start (its port still held) leaves the fleet one server short; the run goes on.
                do {
                    try await servers.restart(crashed)
                    onEvent(.fault("undo: server \(crashed) restarted"))
                } catch {
                    onEvent(.fault("server \(crashed) did not restart: \(error)"))
                }
            case .goAway:
                // A child server says GoAway on its restarts (SIGTERM); it takes no command to.
                guard child == nil else { continue }
                record("GoAway(reconnect: true)" + name)
                servers.members[target].server?.goAwayAll(
                    reason: "soak: rolling restart", reconnect: true, retryAfter: .milliseconds(50))
            case .refuseAndCut(let window):
                await proxy.apply(.refuseConnections(for: nil))
                await proxy.apply(.cut)
                record("refuse connections for \(window), then cut" + name)
                try? await Task.sleep(for: window)
                await proxy.apply(.acceptConnections)
                onEvent(.fault("undo: accept connections" + name))
            case .kickForGood:
                record("kick for good: \"logged in elsewhere\"" + name)
                servers.members[target].server?.kick(
                    principal: SoakServers.principal, reason: "logged in elsewhere", reconnect: false)
            case .expireCredential:
                guard let credentials else { continue }
                let left = credentials.refuseUntilExpiry()
                record("credential expiry: no new credential until it expires in \(left)")
                // The session ends on the expiry; the next fault comes after the login again.
                try? await Task.sleep(for: min(left, max(.zero, end - elapsed())))
            case .killPrimary:
                // A failover and the killed node's return take seconds: not too close to the end.
                guard let killPrimary = servers.killPrimary, elapsed() + .seconds(10) < end else { continue }
                record("kill the Redis primary of the principal's slot")
                let killedAt = elapsed()
                ledger.withLock { $0.primaryKilling(at: killedAt) }
                do {
                    let failover = try await killPrimary()
                    ledger.withLock { $0.primaryKilled(at: killedAt, took: failover.took, now: elapsed()) }
                    onEvent(.fault("undo: " + failover.description))
                } catch {
                    ledger.withLock { $0.primaryKilled(at: killedAt, took: nil, now: elapsed()) }
                    onEvent(.fault("the primary's failover: \(error)"))
                }
            }
        }
    }
}

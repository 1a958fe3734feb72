import LongLinkWire

/// The `Sync` amplification of issue #43: a principal with 10,000 unacknowledged reliable pushes
/// (a 256-byte topic each) is replayed its backlog once, then sends 20 more `Sync`s. Before the
/// `Sync` gate every one of them replayed the whole backlog again (18x the backlog sent for 60
/// bytes); now `Sync`s spread over a time D cost at most ⌊D / syncReplayInterval⌋ + 2 replays
/// (``Outcome/replaysAllowed``): two for a burst inside one interval.
package struct ReplayFlood: Sendable {
    package static let pushes = 10_000
    package static let topic = String(repeating: "t", count: 256)
    package static let syncs = 20
    /// How long the server must send nothing for the flood's cost to be counted complete: longer
    /// than `syncReplayInterval` (1 s), the longest a coalesced replay waits.
    package static let quiet = Duration.milliseconds(1_500)

    package let client: FloodClient
    /// The bytes of the first replay: the backlog on the wire.
    package let backlogBytes: Int

    /// Connects, logs in as `user`, has `emit` store the backlog, sends the first `Sync` and waits
    /// for all of it.
    package static func prepare(port: Int, user: String) async throws -> ReplayFlood {
        let client = try await FloodClient.connect(port: port)
        do {
            try await client.handshake(clientID: "\(user)-device")
            try await client.call("login", user, id: "login")
            let emit = #"{"topic":"\#(topic)","n":\#(pushes),"reliable":true}"#
            try await client.call("emit", emit, id: "emit")
            // Nothing goes out before the Sync.
            let before = client.counts
            guard before.pushes == 0 else {
                throw ToolProcess.Failure(description: "\(before.pushes) pushes before the first Sync")
            }
            _ = try await client.send([.sync(Frame.Sync())])
            try await client.wait("the first replay", within: .seconds(60)) { $0.pushes >= pushes }
            return ReplayFlood(client: client, backlogBytes: client.counts.bytes - before.bytes)
        } catch {
            client.close()
            throw error
        }
    }

    /// What the 20 `Sync`s cost.
    package struct Outcome: Sendable {
        package var traffic: Flood.Traffic
        /// From the first `Sync` written to the last.
        package var spread: Duration
        /// The most replays they may cause: replays begin at least `syncReplayInterval` (1 s)
        /// apart, each after a `Sync` that came after the one before began, so all but the last
        /// begin within the spread: ⌊spread / interval⌋ + 2.
        package var replaysAllowed: Int {
            Int((spread / .seconds(1)).rounded(.down)) + 2
        }
    }

    /// Sends the 20 `Sync`s `spacing` apart (all in one write when zero) and waits until the
    /// server has sent what they cause.
    ///
    /// Spaced, each `Sync` before the gate restarted the replay under way (on a fleet its reads
    /// too); in one write, the reads of a store a round trip away coalesced them already.
    package func syncAgain(spacing: Duration = .milliseconds(50)) async throws -> Outcome {
        let before = client.counts.bytes
        let started = ContinuousClock.now
        var sent = 0
        if spacing == .zero {
            sent = try await client.send(Array(repeating: .sync(Frame.Sync()), count: Self.syncs))
        } else {
            for index in 0..<Self.syncs {
                if index > 0 { try await Task.sleep(for: spacing) }
                sent += try await client.send([.sync(Frame.Sync())])
            }
        }
        let spread = ContinuousClock.now - started
        try await client.waitForQuiet(Self.quiet, within: .seconds(120))
        return Outcome(traffic: Flood.Traffic(sent: sent, received: client.counts.bytes - before), spread: spread)
    }
}

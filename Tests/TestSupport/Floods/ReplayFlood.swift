import LongLinkWire

/// The `Sync` amplification of issue #43: a principal with 10,000 unacknowledged reliable pushes
/// (a 256-byte topic each) is replayed its backlog once, then sends 20 more `Sync`s. Before the
/// `Sync` gate every one of them replayed the whole backlog again (18x the backlog sent for 60
/// bytes); now they cost at most ``extraReplays`` more.
package struct ReplayFlood: Sendable {
    package static let pushes = 10_000
    package static let topic = String(repeating: "t", count: 256)
    package static let syncs = 20
    /// The documented bound: a burst of `Sync`s after a replay costs at most two more replays,
    /// one at once (when `syncReplayInterval` has passed since the last one began) and one when
    /// the interval after it ends.
    package static let extraReplays = 2
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

    /// Sends the 20 `Sync`s in one write and waits until the server has sent what they cause;
    /// returns the bytes sent and received.
    package func syncAgain() async throws -> Flood.Traffic {
        let before = client.counts.bytes
        let sent = try await client.send(Array(repeating: .sync(Frame.Sync()), count: Self.syncs))
        try await client.waitForQuiet(Self.quiet, within: .seconds(60))
        return Flood.Traffic(sent: sent, received: client.counts.bytes - before)
    }
}

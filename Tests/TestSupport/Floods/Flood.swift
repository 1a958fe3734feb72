import LongLinkTesting
import LongLinkWire

/// One inbound frame kind sent as a flood from raw sockets to a server on loopback `port`, and
/// what it cost the server: bytes sent back per byte received, CPU, resident memory and (on a
/// fleet) Redis commands. The floods are the same for one server and for a fleet.
package struct Flood: Sendable {
    /// The frame kind (`Hello`, `Request`, … `garbage`).
    package let kind: String
    /// How many frames of that kind the flood sends (or, for garbage, connections).
    package let frames: Int
    /// What the flood does, beyond the frames counted: its setup and its fence.
    package let shape: String
    /// Runs the flood; returns the bytes sent and received, its setup (Hello, login) included.
    package let run: @Sendable (_ port: Int) async throws -> Traffic

    package struct Traffic: Sendable {
        package var sent = 0
        package var received = 0

        static func + (left: Traffic, right: Traffic) -> Traffic {
            Traffic(sent: left.sent + right.sent, received: left.received + right.received)
        }
    }

    /// Every kind, in the table's order.
    /// (The refused requests last: the 1,024 it leaves running, orphans once its connection
    /// closes, would be counted in the floods after it.)
    package static let all: [Flood] = [hello, request, cancel, ack, sync, ping, goAway, garbage, refusedRequest]

    /// Connections opened `parallel` at a time, each running `body`; their traffic summed.
    static func connections(
        _ count: Int, parallel: Int = 25, port: Int, _ body: @escaping @Sendable (FloodClient, Int) async throws -> Int
    ) async throws -> Traffic {
        var total = Traffic()
        var next = 0
        while next < count {
            let batch = next..<min(count, next + parallel)
            next = batch.upperBound
            total = try await withThrowingTaskGroup(of: Traffic.self) { group in
                for index in batch {
                    group.addTask {
                        let client = try await FloodClient.connect(port: port)
                        defer { client.close() }
                        let sent = try await body(client, index)
                        return Traffic(sent: sent, received: client.counts.bytes)
                    }
                }
                return try await group.reduce(total, +)
            }
        }
        return total
    }

    /// Sends `frames` on a connection (after `Hello`, and a login when `user` is given), then a
    /// `Ping` after them, and waits for its `Pong` (and `until` of what arrived): the server has
    /// handled every frame before it.
    static func oneConnection(
        port: Int, user: String? = nil, _ frames: [Frame], within timeout: Duration = .seconds(10),
        until done: @escaping @Sendable (FloodClient.Received) -> Bool = { _ in true }
    ) async throws -> Traffic {
        let client = try await FloodClient.connect(port: port)
        defer { client.close() }
        var sent = try await client.send([.hello(Frame.Hello(clientID: "flood-\(UInt32.random(in: 0...UInt32.max))"))])
        try await client.wait("Welcome") { $0.welcomes == 1 }
        if let user {
            sent += try await client.send([
                .request(Frame.Request(requestID: "login", method: "login", payload: bytes(user)))
            ])
            try await client.wait("the login") { $0.responses == 1 }
        }
        let pongs = client.counts.pongs
        sent += try await client.send(frames + [.ping(Frame.Ping(nonce: 1))])
        do {
            try await client.wait("the flood's fence", within: timeout) { $0.pongs > pongs && done($0) }
        } catch {
            throw ToolProcess.Failure(description: "\(error); received \(client.counts)")
        }
        return Traffic(sent: sent, received: client.counts.bytes)
    }

    /// `Hello` twice on each of 500 connections: a `Welcome`, then `GoAway` (a second `Hello` is a
    /// protocol violation) and the close.
    static let hello = Flood(kind: "Hello", frames: 1_000, shape: "500 connections × 2 Hello") { port in
        try await connections(500, port: port) { client, index in
            let hello = Frame.hello(Frame.Hello(clientID: "hello-flood-\(index)"))
            let sent = try await client.send([hello, hello])
            try await client.wait("GoAway or the close") { $0.goAways > 0 || $0.closed }
            return sent
        }
    }

    /// 10,000 requests on one connection, half `echo` of one byte, half of a method the server
    /// does not have; every one answered.
    static let request = Flood(kind: "Request", frames: 10_000, shape: "1 connection, echo \"x\" / unknown method") {
        port in
        let frames = (0..<10_000).map { index in
            Frame.request(
                Frame.Request(
                    requestID: "r\(index)", method: index.isMultiple(of: 2) ? "echo" : "no.such", payload: [0x78]))
        }
        return try await oneConnection(port: port, frames) { $0.responses >= 10_000 }
    }

    /// The worst bytes out per byte in a request can get: 1,024 `sleep`s fill the connection's
    /// in-flight limit, then 10,000 of the smallest requests (a short id, a one-letter method) are
    /// each refused with `RESOURCE_EXHAUSTED` and a message longer than they are.
    static let refusedRequest = Flood(
        kind: "Request (refused)", frames: 10_000, shape: "1 connection, 1,024 in flight, then minimal requests"
    ) { port in
        let sleeps = (0..<1_024).map { index in
            Frame.request(Frame.Request(requestID: "-\(index)", method: "sleep", payload: bytes("20000")))
        }
        let minimal = (0..<10_000).map { index in
            Frame.request(Frame.Request(requestID: String(index, radix: 36), method: "x"))
        }
        return try await oneConnection(port: port, sleeps + minimal) { $0.responses >= 10_000 }
    }

    /// 50,000 `Cancel`s of requests that never ran.
    static let cancel = Flood(kind: "Cancel", frames: 50_000, shape: "1 connection, unknown request ids") { port in
        try await oneConnection(port: port, (0..<50_000).map { .cancel(Frame.Cancel(requestID: "c\($0)")) })
    }

    /// 100 `Ack`s of 1,000 seqs each (never sent) after a login.
    static let ack = Flood(kind: "Ack", frames: 100, shape: "1 connection, logged in, 1,000 unsent seqs each") {
        port in
        let frames = (0..<100).map { batch in
            Frame.ack(Frame.Ack(seqs: (0..<1_000).map { UInt64(batch * 1_000 + $0 + 1) }))
        }
        return try await oneConnection(port: port, user: "ack-flooder", frames)
    }

    /// 20,000 `Sync`s after a login, nothing stored for the principal.
    static let sync = Flood(kind: "Sync", frames: 20_000, shape: "1 connection, logged in, empty backlog") { port in
        try await oneConnection(
            port: port, user: "sync-flooder", Array(repeating: .sync(Frame.Sync()), count: 20_000))
    }

    /// 20,000 of the smallest `Ping`s (nonce 0), every one answered by a `Pong` that adds the
    /// server's load.
    static let ping = Flood(kind: "Ping", frames: 20_000, shape: "1 connection, nonce 0") { port in
        try await oneConnection(port: port, Array(repeating: .ping(Frame.Ping(nonce: 0)), count: 20_000)) {
            $0.pongs >= 20_001
        }
    }

    /// `Hello` then 20 `GoAway`s on each of 200 connections.
    static let goAway = Flood(kind: "GoAway", frames: 4_000, shape: "200 connections × (Hello + 20 GoAway)") { port in
        try await connections(200, port: port) { client, index in
            let frames =
                [Frame.hello(Frame.Hello(clientID: "goaway-flood-\(index)"))]
                + Array(repeating: .goAway(Frame.GoAway(code: .ok, reason: "bye")), count: 20)
            let sent = try await client.send(frames)
            try await client.wait("the close") { $0.closed }
            return sent
        }
    }

    /// 32 frames of 127 random bytes each (a length prefix, then garbage) on each of 200
    /// connections before any `Hello`, then `Hello` and `Ping`: the server closes at the first
    /// frame that does not decode, or ignores them (a frame of a kind it does not know) and
    /// answers the `Ping`. (Bytes that never complete a frame are held until
    /// `handshakeTimeout` or `partialFrameTimeout`: a slow client, not a flood.)
    static let garbage = Flood(kind: "garbage", frames: 6_400, shape: "200 connections × 32 random frames, no Hello") {
        port in
        try await connections(200, port: port) { client, index in
            var random = SplitMix64(seed: UInt64(index) + 43)
            var junk: [UInt8] = []
            for _ in 0..<32 {
                junk.append(127)
                junk += (0..<127).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            var fence: [UInt8] = []
            Frame.hello(Frame.Hello(clientID: "garbage-\(index)")).encodeDelimited(into: &fence)
            Frame.ping(Frame.Ping(nonce: 1)).encodeDelimited(into: &fence)
            await client.sendRaw(junk + fence)
            try await client.wait("the close or the Pong") { $0.closed || $0.pongs > 0 }
            return junk.count + fence.count
        }
    }
}

/// What one flood cost the server.
package struct FloodRow: Sendable {
    package var flood: Flood
    package var traffic: Flood.Traffic
    package var cpu: Duration
    package var residentGrowth: Int
    /// Redis commands (by name, lower case) the flood caused, when on a fleet.
    package var redisCalls: [String: Int]?
    /// How long the flood took, its waits included.
    package var elapsed: Duration = .zero

    /// Bytes the server sent per byte it received.
    package var amplification: Double { Double(traffic.received) / Double(max(1, traffic.sent)) }
    package var redisTotal: Int? { redisCalls.map { $0.values.reduce(0, +) } }

    /// Runs `flood` against `server` and measures it; `redisCalls` reads the Redis counters.
    package static func measure(
        _ flood: Flood, on server: ServeProcess, redisCalls: (@Sendable () async throws -> [String: Int])? = nil
    ) async throws -> FloodRow {
        let before = try server.usage()
        let callsBefore = try await redisCalls?()
        let started = ContinuousClock.now
        let traffic = try await flood.run(server.port)
        let elapsed = ContinuousClock.now - started
        let after = try server.usage()
        var calls: [String: Int]?
        if let callsBefore, let redisCalls, let callsAfter = try await settled(redisCalls) {
            calls = callsAfter.map { ($0.key, $0.value - callsBefore[$0.key, default: 0]) }.filter { $0.1 > 0 }
                .reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        return FloodRow(
            flood: flood, traffic: traffic, cpu: after.cpu - before.cpu,
            residentGrowth: after.residentBytes - before.residentBytes, redisCalls: calls, elapsed: elapsed)
    }

    /// Commands that come with time, not with frames: the fleet's session checks (`TIME`,
    /// `GET`), its claim lease (`SET`) and its Redis connections' health checks (`PING`).
    package static let periodicRedisCommands: Set = ["time", "get", "set", "ping"]

    /// The Redis counters once the server's store calls have caught up with the flood (a reply
    /// is stored after it was sent): no command but the periodic ones for 300 ms, within 10 s.
    private static func settled(_ read: @Sendable () async throws -> [String: Int]) async throws -> [String: Int]? {
        func work(_ calls: [String: Int]) -> [String: Int] { calls.filter { !periodicRedisCommands.contains($0.key) } }
        var last = try await read()
        var quietSince = ContinuousClock.now
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            let now = try await read()
            if work(now) != work(last) { quietSince = .now }
            last = now
            if ContinuousClock.now - quietSince >= .milliseconds(300) { break }
        }
        return last
    }

    /// The rows as a Markdown table.
    package static func table(_ rows: [FloodRow]) -> String {
        var lines = [
            "| frame | flood | bytes in | bytes out | out / in | server CPU | RSS change | Redis commands | took |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
        ]
        for row in rows {
            let redis =
                row.redisCalls.map { calls in
                    calls.isEmpty
                        ? "0"
                        : "\(calls.values.reduce(0, +)) ("
                            + calls.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(
                                separator: ", ")
                            + ")"
                } ?? "—"
            let ratio = (row.amplification * 100).rounded() / 100
            lines.append(
                "| \(row.flood.kind) | \(row.flood.shape) | \(row.traffic.sent) | \(row.traffic.received) | \(ratio) | "
                    + "\(row.cpu.milliseconds) ms | \(row.residentGrowth >> 10) KiB | \(redis) | "
                    + "\(row.elapsed.milliseconds) ms |")
        }
        return lines.joined(separator: "\n")
    }
}

extension Duration {
    /// Whole milliseconds.
    package var milliseconds: Int64 { components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000 }
}

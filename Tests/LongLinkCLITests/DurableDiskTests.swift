import LongLinkCore
import Foundation
import LongLink
import LongLinkTestSupport
import LongLinkTransport
import Testing

/// `longlink serve --data-dir` on a disk that fills up or is read-only (a small tmpfs), and two
/// servers on one directory.
@Suite("longlink serve --data-dir: disk faults", .sharedMachine)
struct DurableDiskTests {
    /// The code a failed request ended with.
    static func code(of call: () async throws -> Void) async -> LongLinkError.Code? {
        do {
            try await call()
            return nil
        } catch {
            return (error as? LongLinkError)?.code
        }
    }

    /// An `echo` from a client that never logs in: no de-dup entry, so no write to the store.
    static func echo(port: Int) async throws -> String {
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: port)])
        configuration.backoff = Backoff(initial: .milliseconds(10), maximum: .milliseconds(50), jitter: false)
        let client = LongLinkClient(configuration: configuration)
        let running = Task { try await client.run() }
        defer {
            client.shutdown()
            running.cancel()
        }
        var options = RequestOptions()
        options.timeout = .seconds(5)
        return String(
            decoding: try await client.request("echo", payload: Array("still here".utf8), options: options),
            as: UTF8.self)
    }

    @Test(.enabled(if: SmallDisk.available, SmallDisk.skipReason))
    func aFullDiskRefusesPushesWithResourceExhaustedAndDamagesNothing() async throws {
        let disk = try SmallDisk(megabytes: 4)
        let data = disk.path + "/data"
        var server = try await ServeProcess.start(dataDirectory: data)
        let client = DurableServe.client(port: server.port)
        let ledger = Locked(DurableServe.Ledger())
        let stream = client.pushes(topic: nil)
        let consumer = Task {
            for await push in stream { ledger.withLock { $0.delivered[push.topic, default: 0] += 1 } }
        }
        let running = Task { try await client.run() }
        defer {
            client.shutdown()
            running.cancel()
            consumer.cancel()
        }
        var produced: [String] = []
        for index in 1...5 {
            _ = try await DurableServe.emit(client, topic: "before.\(index)")
            produced.append("before.\(index)")
        }

        let filled = try disk.fill()
        // The WAL may still have room in pages it already holds: a few writes can succeed first.
        var refusal: LongLinkError.Code?
        var index = 0
        while refusal == nil, index < 500 {
            index += 1
            let topic = "full.\(index)"
            refusal = await Self.code { _ = try await DurableServe.emit(client, topic: topic) }
            if refusal == nil { produced.append(topic) }
        }
        #expect(refusal == .resourceExhausted, "after \(index) pushes on a full disk (filler \(filled) bytes)")
        print("durable full disk: refused with \(String(describing: refusal)) at push \(index) after the filler")
        #expect(try await Self.echo(port: server.port) == "still here", "the server still serves requests")
        // A logged-in session's request needs a de-dup entry written first: on a full disk it is
        // refused as the push was, not run unrecorded.
        let counted = await Self.code { _ = try await client.request("count", payload: Array("{}".utf8)) }
        #expect(counted == .resourceExhausted || counted == .unavailable, "\(String(describing: counted))")
        print("durable full disk: a logged-in count answered \(String(describing: counted))")

        try disk.free()
        try await eventually("pushes are stored again once the disk has room", within: .seconds(10)) {
            (try? await DurableServe.emit(client, topic: "after")) != nil
        }
        produced.append("after")
        try await eventually("every stored push delivered", within: .seconds(10)) {
            ledger.withLock { state in produced.allSatisfy { state.delivered[$0] != nil } }
        }
        #expect(ledger.withLock { $0.delivered.values.allSatisfy { $0 == 1 } })

        try await server.kill()
        #expect(try await SmallDisk.quickCheck(data + "/longlink.sqlite") == "ok")
        server = try await server.restart(dataDirectory: data)
        #expect(try await Self.echo(port: server.port) == "still here")
        await server.stop()
    }

    @Test(.enabled(if: SmallDisk.available, SmallDisk.skipReason))
    func aReadOnlyDirectoryIsRefusedAndDamagesNothing() async throws {
        let disk = try SmallDisk(megabytes: 4)
        let data = disk.path + "/data"
        var server = try await ServeProcess.start(dataDirectory: data)
        let client = DurableServe.client(port: server.port)
        let running = Task { try await client.run() }
        defer {
            client.shutdown()
            running.cancel()
        }
        for index in 1...5 { _ = try await DurableServe.emit(client, topic: "kept.\(index)") }
        try await server.kill()
        // A running server's files are open for writing, so the kernel refuses to remount them
        // read-only (EBUSY): the directory turns read-only between two runs, as after a remount
        // by an operator or a disk the kernel made read-only on errors.
        try disk.remount(readOnly: true)
        let refused = try ToolProcess(["serve", "--port", "0", "--quiet", "--no-feed", "--data-dir", data])
        defer { refused.terminate() }
        let outcome = try await refused.waitForExit(within: .seconds(20))
        #expect(outcome.status != 0, "serve started on a read-only directory: \(outcome.standardOutput)")
        #expect(outcome.standardError.contains(data), "the error names the directory: \(outcome.standardError)")
        print("durable read-only: serve exited \(outcome.status): \(outcome.standardError)")
        try disk.remount(readOnly: false)
        #expect(try await SmallDisk.quickCheck(data + "/longlink.sqlite") == "ok")
        server = try await server.restart(dataDirectory: data)
        #expect(try await Self.echo(port: server.port) == "still here")
        await server.stop()
    }

    @Test func aSecondServerOnOneDirectoryRefusesToStart() async throws {
        let directory = try TemporaryDirectory("durable-twice")
        let first = try await ServeProcess.start(dataDirectory: directory.path)
        let second = try ToolProcess(["serve", "--port", "0", "--quiet", "--no-feed", "--data-dir", directory.path])
        defer { second.terminate() }
        let outcome = try await second.waitForExit(within: .seconds(20))
        #expect(outcome.status != 0)
        #expect(!outcome.standardOutput.contains("listening on"), "\(outcome.standardOutput)")
        #expect(outcome.standardError.contains(directory.path), "names the directory: \(outcome.standardError)")
        #expect(outcome.standardError.contains("longlink.lock"), "names the lock: \(outcome.standardError)")
        #expect(try await Self.echo(port: first.port) == "still here", "the first one still serves")
        await first.stop()
    }
}

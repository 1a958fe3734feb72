import LongLink
import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import longlink

/// `longlink subscribe --ack-after-print`, through the command's own stream and print loop against
/// a real server: a push whose line was not written is not acknowledged.
@Suite("longlink subscribe --ack-after-print", .sharedMachine)
struct SubscribeAckAfterPrintTests {
    /// A server whose `login` binds the user it is given.
    private static func startServer() async throws -> (LongLinkServer, Task<Void, any Error>, Int) {
        var router = Router()
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        var configuration = ServerConfiguration.testing
        configuration.endpoint = .tcp(host: "127.0.0.1", port: 0)
        let server = LongLinkServer(configuration: configuration, router: router)
        let task = Task { try await server.run() }
        return (server, task, try await server.localAddress.port ?? 0)
    }

    private static func client(port: Int) -> LongLinkClient {
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: port)])
        configuration.clientID = "printer"
        configuration.ackBatchSize = 1
        configuration.login = { session in _ = try await session.request("login", payload: Array("ida".utf8)) }
        return LongLinkClient(configuration: configuration)
    }

    @Test func aPushWhoseLineWasNotWrittenComesAgainNextTime() async throws {
        let (server, serverTask, port) = try await Self.startServer()
        let first = Self.client(port: port)
        let pushes = SubscribeCommand.deliveries(of: first, topic: "alerts", ackAfterPrint: true)
        let running = Task { try await first.run() }
        for n in 1...2 { _ = try await server.push(to: "ida", topic: "alerts", payload: Array("\(n)".utf8)) }
        // The second line's write fails: the reader went away.
        let lines = Mailbox<String>()
        let printed = try await within(.seconds(10), "the print loop to end") {
            var writes = 0
            return await SubscribeCommand.print(pushes, count: nil) { line in
                writes += 1
                guard writes < 2 else { return false }
                lines.put(line)
                return true
            }
        }
        #expect(printed == SubscribeCommand.Printed(lines: 1, reliable: 1))
        #expect(try await lines.next(within: .seconds(1), "the first line") == "1\talerts\t1")
        try await eventually("the printed push is acknowledged") { server.statistics.acksReceived >= 1 }
        first.shutdown()
        _ = await running.result
        #expect(server.statistics.acksReceived == 1)

        let second = Self.client(port: port)
        let again = SubscribeCommand.deliveries(of: second, topic: "alerts", ackAfterPrint: true)
        let secondRun = Task { try await second.run() }
        let next = try await within(.seconds(10), "the unprinted push to come again") {
            await SubscribeCommand.print(again, count: 1) { line in
                lines.put(line)
                return true
            }
        }
        #expect(next.lines == 1)
        #expect(try await lines.next(within: .seconds(1), "the line printed again") == "2\talerts\t2")
        second.shutdown()
        _ = await secondRun.result
        server.shutdown()
        try await serverTask.value
    }
}

import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// An app that keeps state per connection (a room's members) hears when a connection closes, and
/// a handler that outlives its connection can tell.
@Suite("Connection closed callback", .sharedMachine)
struct ConnectionClosedTests {
    @Test func theCallbackNamesTheClosedConnectionAndAHandlerStillRunningSeesItClosed() async throws {
        let closed = Mailbox<UInt64>()
        let started = Mailbox<UInt64>()
        let gate = Mailbox<Void>()
        let seenOpen = Mailbox<Bool>()
        var configuration = ServerConfiguration.testing
        configuration.connectionClosed = { id in closed.put(id) }
        var router = Router()
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        router.register("id") { _, context in Array("\(context.connectionID)".utf8) }
        router.register("outlive") { _, context in
            started.put(context.connectionID)
            // Runs on after its connection closed (an orphan, kept for the client's resend).
            _ = try await gate.next(within: .seconds(20), "the test to open the gate")
            seenOpen.put(context.isConnectionOpen)
            return []
        }
        let server = LongLinkServer(configuration: configuration, router: router)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let address = try await server.localAddress

            let first = try await FrameClient.connect(to: address)
            _ = try await first.handshake(clientID: "first")
            // Logged in, so its requests are de-duplicated and a handler outlives its connection.
            #expect(try await first.call("login", Array("alice".utf8), id: "0").status == nil)
            let firstID = UInt64(try await first.call("id", id: "1").text) ?? 0
            try await first.send(.request(Frame.Request(requestID: "2", method: "outlive")))
            #expect(try await started.next() == firstID)
            let other = try await FrameClient.connect(to: address)
            _ = try await other.handshake(clientID: "other")

            first.close()
            #expect(try await closed.next(within: .seconds(20), "the callback") == firstID)
            gate.put(())
            #expect(try await seenOpen.next() == false)
            // Once per connection, and only for the closed one.
            #expect(closed.count == 0)
            #expect(try await other.call("echo-free", id: "3").status?.code == .unimplemented)

            server.shutdown()
            try await group.waitForAll()
            #expect(try await closed.next(within: .seconds(20), "the other's callback at shutdown") != firstID)
        }
    }
}

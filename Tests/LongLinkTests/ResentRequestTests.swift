import LongLink
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Synchronization
import Testing

@Suite("Request.resent on the wire", .sharedMachine)
struct ResentRequestTests {
    /// A request written on a logged-in link that drops before its reply goes out again on the
    /// next link with the same id and `resent` set; first writes, before and after the reconnection, never
    /// carry it. Seen by a real socket peer decoding the frames.
    @Test func aCopyWrittenAfterAReconnectionIsMarkedResent() async throws {
        let requests = Mailbox<Frame.Request>()
        let dropped = Atomic<Bool>(false)
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello:
                // A window: the client resends what the dropped link left unanswered.
                peer.welcome(dedupeWindowMilliseconds: 60_000)
            case .request(let request):
                if request.method != "login" { requests.put(request) }
                if request.method == "work", !dropped.exchange(true, ordering: .relaxed) {
                    peer.connection.close(.immediately)
                } else {
                    peer.send(.response(Frame.Response(requestID: request.requestID, payload: request.payload)))
                }
            default: break
            }
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        // Logged in: a server de-duplicates nothing made before a login, so no copy would go.
        configuration.login = { session in _ = try await session.request("login") }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        let work = Task { try await client.request("work", payload: bytes("w")) }
        let first = try await requests.next()
        let copy = try await requests.next()
        #expect(try await work.value == bytes("w"))
        #expect(first.method == "work" && !first.resent)
        #expect(copy.requestID == first.requestID)
        #expect(copy.resent, "the copy written after the reconnection is not marked resent")
        #expect(await client.statistics.resends == 1)
        // A new request on the new link is a first write.
        #expect(try await client.request("fresh", payload: bytes("f")) == bytes("f"))
        let fresh = try await requests.next()
        #expect(fresh.method == "fresh" && !fresh.resent)
        await running.stop()
        server.stop()
    }
}

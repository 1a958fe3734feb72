import Foundation
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// `push(to:topic:message:codec:)`: a message encoded as `Router`'s typed handlers encode replies,
/// then stored and sent as any reliable push.
@Suite("Typed pushes", .sharedMachine)
struct TypedPushTests {
    struct PriceAlert: Codable, Equatable {
        var alertID: Int
        var symbol: String
    }

    struct Reading: Encodable {
        var value: Double
    }

    private func synced(_ address: SocketAddress, as user: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: "\(user)-phone")
        #expect(try await client.call("login", bytes(user), id: "login").text == "welcome")
        try await client.send(.sync(Frame.Sync()))
        return client
    }

    private func nextPush(_ client: FrameClient) async throws -> Frame.Push? {
        let frame = try await client.nextFrame()
        guard case .push(let push) = frame else {
            Issue.record("expected Push, got \(frame)")
            return nil
        }
        return push
    }

    /// JSON by default, as the client's typed pushes decode it; the codec given otherwise.
    @Test func aTypedPushGoesOutEncodedWithItsCodec() async throws {
        try await withServer { server, address in
            let client = try await synced(address, as: "kim")
            let first = PriceAlert(alertID: 7, symbol: "AAPL")
            #expect(try await server.push(to: "kim", topic: "alerts", message: first) == 1)
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            let snakeCase = JSONPayloadCodec(encoder: encoder, decoder: JSONDecoder())
            let second = PriceAlert(alertID: 8, symbol: "MSFT")
            #expect(try await server.push(to: "kim", topic: "alerts", message: second, codec: snakeCase) == 2)

            let sentFirst = try #require(try await nextPush(client))
            #expect(sentFirst.seq == 1 && sentFirst.topic == "alerts")
            #expect(try JSONPayloadCodec().decode(PriceAlert.self, from: sentFirst.payload) == first)
            let sentSecond = try #require(try await nextPush(client))
            #expect(sentSecond.seq == 2)
            #expect(String(decoding: sentSecond.payload, as: UTF8.self).contains(#""alert_id":8"#))
        }
    }

    /// A message the codec cannot encode (JSON has no NaN) is refused `INVALID_ARGUMENT` and takes
    /// no seq.
    @Test func aMessageThatDoesNotEncodeIsRefusedAndNotStored() async throws {
        // `throws`: every `try` below is inside a macro, which the closure's inference does not see.
        try await withServer { server, _ throws in
            await #expect {
                try await server.push(to: "lee", topic: "readings", message: Reading(value: .nan))
            } throws: { error in
                (error as? LongLinkError)?.code == .invalidArgument
            }
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: "lee") == 0)
            #expect(try await server.push(to: "lee", topic: "readings", message: Reading(value: 1.5)) == 1)
        }
    }
}

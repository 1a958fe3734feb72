import Foundation
import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLink

/// Whether Python's official protobuf runtime is there (CI installs it; see .ci/run).
enum PythonProtobuf {
    static let howToEnable = "needs python3 with the protobuf runtime: pip install protobuf"
    static let isAvailable: Bool = {
        let result = try? Subprocess.runBlocking(["python3", "-c", "import google.protobuf"], timeout: .seconds(60))
        return result.map { $0.status == 0 && !$0.timedOut } ?? false
    }()
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/tick.py").path

    static func run(_ arguments: [String]) async throws -> String {
        let result = try await Subprocess.run(["python3", script] + arguments, timeout: .seconds(60))
        try #require(result.status == 0 && !result.timedOut, "tick.py failed: \(result.errorOutput)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

private func hexBytes(_ hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return bytes
}

private func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

struct LatestTick: LongLinkRequest, Encodable {
    typealias Reply = Quotes_Tick
    static let method = "tick.latest"
    var symbol: String
}

extension Quotes_Tick: LongLinkRequest {
    typealias Reply = RawPayload
    static let method = "echo"
}

@Suite("Payloads: JSON, binary messages, raw bytes, decoding failures", .sharedMachine)
struct PayloadTests {
    private func loggedIn(
        _ endpoint: Endpoint, as user: String, _ adjust: (inout ClientConfiguration) -> Void = { _ in }
    )
        -> RunningClient
    {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        adjust(&configuration)
        return RunningClient(configuration)
    }

    @Test func theJSONCodecUsesTheEncoderAndDecoderItIsGiven() throws {
        struct Quote: Codable, Equatable { var lastPrice: Double }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let codec = JSONPayloadCodec(encoder: encoder, decoder: decoder)
        let bytes = try codec.encode(Quote(lastPrice: 1.5))
        #expect(text(bytes) == #"{"last_price":1.5}"#)
        #expect(try codec.decode(Quote.self, from: bytes) == Quote(lastPrice: 1.5))
        #expect(throws: (any Error).self) { try JSONPayloadCodec().decode(Quote.self, from: bytes) }
    }

    @Test(.enabled(if: PythonProtobuf.isAvailable, "\(PythonProtobuf.howToEnable)"))
    func aGeneratedLikeMessageReadsAndWritesWhatTheProtobufRuntimeDoes() async throws {
        let python = hexBytes(try await PythonProtobuf.run(["encode", "AAPL", "-12345", "987654321"]))
        let tick = try Quotes_Tick(serializedBytes: python)
        #expect(tick.symbol == "AAPL")
        #expect(tick.priceE4 == -12345)
        #expect(tick.volume == 987_654_321)
        #expect(tick.flags == [1, 300, 70000])
        var mine = Quotes_Tick()
        mine.symbol = "MSFT"
        mine.priceE4 = 4_200_000
        mine.volume = 7
        mine.flags = [9]
        let decoded = try await PythonProtobuf.run(["decode", hexString(try mine.serializedBytes())])
        #expect(decoded == #"{"symbol": "MSFT", "price_e4": 4200000, "volume": 7, "flags": [9]}"#)
    }

    /// The typed request, its reply and a typed push, each as a binary message the protobuf runtime
    /// encoded, over a real server.
    @Test(.enabled(if: PythonProtobuf.isAvailable, "\(PythonProtobuf.howToEnable)"))
    func binaryMessagesTravelAsTypedRequestsRepliesAndPushes() async throws {
        let python = hexBytes(try await PythonProtobuf.run(["encode", "AAPL", "1890000", "42"]))
        let probe = Probe()
        var configuration = ServerConfiguration.testing
        configuration.endpoint = .tcp(host: "127.0.0.1", port: 0)
        var router = probe.router()
        router.register("tick.latest") { payload, _ in
            struct Ask: Decodable { var symbol: String }
            guard try JSONDecoder().decode(Ask.self, from: Data(payload)).symbol == "AAPL" else { return [] }
            return python
        }
        let server = LongLinkServer(configuration: configuration, router: router)
        let serverTask = Task { try await server.run() }
        let address = try await server.localAddress
        let running = loggedIn(.tcp(host: address.host, port: address.port ?? 0), as: "quin")
        let ticks = running.client.pushes(topic: "ticks", as: Quotes_Tick.self)
        try await running.waitUntilConnected()

        let reply = try await running.client.send(LatestTick(symbol: "AAPL"))
        #expect(reply.symbol == "AAPL" && reply.priceE4 == 1_890_000 && reply.volume == 42)
        // A binary request with a raw reply: the echo is the request's own bytes.
        let echoed = try await running.client.send(reply)
        #expect(echoed.bytes == (try reply.serializedBytes()))

        try await server.push(to: "quin", topic: "ticks", payload: python)
        let pushed = try await within(.seconds(20), "the tick push") {
            var iterator = ticks.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(pushed?.flags == [1, 300, 70000])
        await running.stop()
        server.shutdown()
        try await serverTask.value
    }

    @Test func aReplyThatDoesNotDecodeIsATypedErrorAndTheLinkStays() async throws {
        struct Room: Codable, Sendable { var id: Int }
        struct Echo: LongLinkRequest, Encodable {
            typealias Reply = Room
            static let method = "echo"
            var text: String
        }
        let server = try await RunningServer.start(probe: Probe())
        let running = loggedIn(server.endpoint, as: "rae")
        try await running.waitUntilConnected()
        let error = await #expect(throws: LongLinkError.self) { try await running.client.send(Echo(text: "x")) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.message.contains("echo") == true)
        #expect(error?.message.contains("Room") == true)
        #expect(text(try await running.client.request("echo", payload: bytes("still here"))) == "still here")
        #expect(await running.client.statistics.connects == 1)
        await running.stop()
        try await server.stop()
    }

    /// The decoded-pushes sequence hands an undecodable reliable push over as an element, and the
    /// push is acknowledged only after that.
    @Test func anUndecodablePushIsAnElementAndIsAckedOnlyOnceHandedOver() async throws {
        struct Alert: Codable, Sendable, Equatable { var price: Double }
        let store = InMemoryPushStore()
        let server = try await RunningServer.start(probe: Probe(), store: store)
        let running = loggedIn(server.endpoint, as: "sol")
        let alerts = running.client.decodedPushes(topic: "alerts", as: Alert.self)
        try await running.waitUntilConnected()
        try await server.server.push(to: "sol", topic: "alerts", payload: bytes("not json"))
        try await server.server.push(to: "sol", topic: "alerts", payload: bytes(#"{"price":2}"#))
        try await eventually("both pushes reached the client") { await running.client.statistics.pushesReceived == 2 }
        #expect(server.server.statistics.acksReceived == 0)
        let elements = Mailbox<DecodedPush<Alert>>()
        let takeSecond = Mailbox<Void>()
        let consumer = Task {
            var iterator = alerts.makeAsyncIterator()
            if let element = try await iterator.next() { elements.put(element) }
            try await takeSecond.next()
            if let element = try await iterator.next() { elements.put(element) }
        }
        let first = try await elements.next()
        guard case .undecodable(let push, let error) = first else {
            Issue.record("expected an undecodable element, got \(first)")
            return
        }
        #expect(push.seq == 1 && text(push.payload) == "not json")
        #expect(error.code == .decodingFailed && error.message.contains("alerts"))
        try await eventually("the undecodable push is acked once seen") {
            store.unacknowledgedCount(principal: "sol") == 1
        }
        takeSecond.put(())
        let second = try await elements.next()
        #expect(try second.message() == Alert(price: 2))
        try await consumer.value
        try await eventually("both are acked") { store.unacknowledgedCount(principal: "sol") == 0 }
        #expect(await running.client.statistics.undecodablePushes == 1)
        await running.stop()
        try await server.stop()
    }
}

import LongLinkTestSupport
import LongLinkWire
import Testing

/// Serialized: its loops are CPU-bound, so its cases run one at a time (each yielding, see `Pacer`)
/// rather than all at once queueing ahead of every other test's work on the two cooperative threads.
@Suite("Round trips", .sharedMachine, .serialized)
struct RoundTripTests {
    /// Encodes, decodes and re-encodes; the frame and the bytes must both survive.
    private func expectRoundTrip(_ frame: Frame, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let encoded = frame.encodedBytes
        #expect(encoded.count == frame.encodedSize, sourceLocation: sourceLocation)
        let decoded = try Frame(decoding: encoded)
        #expect(decoded == frame, sourceLocation: sourceLocation)
        // Byte equality is stricter than `==`, which treats canonically equivalent strings as equal.
        #expect(decoded.encodedBytes == encoded, sourceLocation: sourceLocation)
    }

    @Test("Random frames of every kind survive encode and decode", arguments: 0..<FrameGenerator.kindCount)
    func randomFrames(kind: Int) async throws {
        var generator = FrameGenerator(seed: 0x5EED_0000 + UInt64(kind))
        var pacer = Pacer()
        for _ in 0..<300 {
            try expectRoundTrip(generator.frame(kind: kind))
            await pacer.yieldIfDue()
        }
    }

    @Test("Edge values: maxima, empty and multi-byte strings, large payloads, long lists")
    func edgeValues() throws {
        let longText = String(repeating: "价格é😀a\u{301}", count: 10_000)
        let frames: [Frame] = [
            .hello(Frame.Hello(version: .max, clientID: longText, heartbeatMilliseconds: .max, metadata: ["": ""])),
            .hello(Frame.Hello(version: 0)),
            .welcome(
                Frame.Welcome(
                    version: .max, serverID: "s", heartbeatMilliseconds: .max, maxFrameBytes: .max, loadPermille: .max,
                    dedupeWindowMilliseconds: .max)),
            .welcome(Frame.Welcome(version: 0)),
            .request(
                Frame.Request(
                    requestID: "18446744073709551615", method: "ключ",
                    payload: [UInt8](repeating: 0xAB, count: 1 << 20),
                    timeoutMilliseconds: .max, metadata: ["k😀": longText, "é": "", "": "v"])),
            .request(Frame.Request()),
            .response(Frame.Response()),
            .response(Frame.Response(requestID: "1", status: Frame.Status())),
            .response(
                Frame.Response(
                    requestID: "1", status: Frame.Status(code: StatusCode(rawValue: .max), message: longText))),
            .cancel(Frame.Cancel()),
            .push(Frame.Push(seq: .max, topic: longText, payload: [0])),
            .push(Frame.Push()),
            .ack(Frame.Ack(seqs: Array(0...20_000) + [.max, 0, .max])),
            .ack(Frame.Ack()),
            .sync(Frame.Sync()),
            .ping(Frame.Ping(nonce: .max)),
            .ping(Frame.Ping()),
            .pong(Frame.Pong(nonce: .max, loadPermille: .max)),
            .goAway(Frame.GoAway(code: .unavailable, reason: longText, reconnect: true, retryAfterMilliseconds: .max)),
            .goAway(Frame.GoAway()),
        ]
        for frame in frames {
            try expectRoundTrip(frame)
        }
    }

    @Test("An unrecognized frame encodes to nothing, and delimited to a zero length")
    func unrecognized() throws {
        #expect(Frame.unrecognized.encodedBytes == [])
        #expect(Frame.unrecognized.encodedSize == 0)
        #expect(Frame.unrecognized.delimitedBytes == [0])
        #expect(try Frame(decoding: []) == .unrecognized)
    }

    @Test("encode and encodeDelimited append to what the buffer holds")
    func appends() async throws {
        var generator = FrameGenerator(seed: 7)
        var pacer = Pacer()
        var buffer: [UInt8] = [0xEE]
        var expected: [UInt8] = [0xEE]
        for _ in 0..<200 {
            await pacer.yieldIfDue()
            let frame = generator.frame()
            frame.encodeDelimited(into: &buffer)
            let body = frame.encodedBytes
            var prefix: [UInt8] = []
            var length = UInt64(body.count)
            while length >= 0x80 {
                prefix.append(UInt8(truncatingIfNeeded: length) | 0x80)
                length >>= 7
            }
            prefix.append(UInt8(length))
            expected += prefix + body
        }
        #expect(buffer == expected)
    }

    @Test("Equal maps encode to equal bytes whatever their insertion order")
    func deterministicMaps() {
        var forward: [String: String] = [:]
        var backward: [String: String] = [:]
        let keys = (0..<100).map { "key-\($0)-é" }
        for key in keys {
            forward[key] = key
        }
        for key in keys.reversed() {
            backward[key] = key
        }
        let first = Frame.request(Frame.Request(metadata: forward)).encodedBytes
        let second = Frame.request(Frame.Request(metadata: backward)).encodedBytes
        #expect(first == second)
    }
}

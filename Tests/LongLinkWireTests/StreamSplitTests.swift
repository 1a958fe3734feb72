import LongLinkTestSupport
import LongLinkWire
import Testing

/// TCP may split and merge frames anywhere: every way of cutting a stream must give the same frames.
///
/// Serialized: its loops are CPU-bound, so its cases run one at a time (each yielding, see `Pacer`)
/// rather than all at once queueing ahead of every other test's work on the two cooperative threads.
@Suite("Stream splitting", .sharedMachine, .serialized)
struct StreamSplitTests {
    /// Feeds `chunks` through `append` + `next`, yielding now and then (see `Pacer`).
    private func decodeByAppending(_ chunks: some Sequence<ArraySlice<UInt8>>) async throws -> [Frame] {
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        var pacer = Pacer()
        for chunk in chunks {
            decoder.append(contentsOf: chunk)
            while let frame = try decoder.next() {
                frames.append(frame)
            }
            await pacer.yieldIfDue()
        }
        #expect(decoder.bufferedByteCount == 0)
        return frames
    }

    /// Feeds `chunks` through the batch path, yielding now and then (see `Pacer`).
    private func decodeInBatches(
        _ chunks: some Sequence<ArraySlice<UInt8>>, maxFrameBytes: Int = Frame.defaultMaxFrameBytes
    )
        async throws -> [Frame]
    {
        var decoder = FrameDecoder(maxFrameBytes: maxFrameBytes)
        var frames: [Frame] = []
        var pacer = Pacer()
        for chunk in chunks {
            try decoder.decode(chunk, into: &frames)
            #expect(decoder.bufferedByteCount < maxFrameBytes + 10)
            await pacer.yieldIfDue()
        }
        #expect(decoder.bufferedByteCount == 0)
        #expect(try decoder.next() == nil)
        return frames
    }

    /// A few small frames of different kinds (about 80 bytes in all).
    private static let smallFrames: [Frame] = [
        .hello(Frame.Hello(clientID: "c-é", metadata: ["a": "1"])),
        .ping(Frame.Ping(nonce: .max)),
        .unrecognized,
        .request(Frame.Request(requestID: "1", method: "m", payload: [1, 2, 3], timeoutMilliseconds: 300)),
        .sync(Frame.Sync()),
        .ack(Frame.Ack(seqs: [1, 300, 1 << 40])),
    ]

    private static func stream(of frames: [Frame]) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames {
            frame.encodeDelimited(into: &bytes)
        }
        return bytes
    }

    /// `count` frames from `generator`, yielding now and then (see `Pacer`).
    private static func frames(_ count: Int, from generator: inout FrameGenerator) async -> [Frame] {
        var frames: [Frame] = []
        var pacer = Pacer()
        for _ in 0..<count {
            frames.append(generator.frame())
            await pacer.yieldIfDue()
        }
        return frames
    }

    @Test("Every 2-way and 3-way split of a small stream decodes to the same frames")
    func allSplits() async throws {
        let frames = Self.smallFrames
        let stream = Self.stream(of: frames)
        for first in 0...stream.count {
            let twoWay = [stream[..<first], stream[first...]]
            #expect(try await decodeByAppending(twoWay) == frames)
            #expect(try await decodeInBatches(twoWay) == frames)
            for second in first...stream.count {
                let threeWay = [stream[..<first], stream[first..<second], stream[second...]]
                #expect(try await decodeByAppending(threeWay) == frames)
                #expect(try await decodeInBatches(threeWay) == frames)
            }
        }
    }

    @Test("One byte at a time")
    func oneByteAtATime() async throws {
        var generator = FrameGenerator(seed: 11, maxPayloadBytes: 1_000)
        let frames = await Self.frames(150, from: &generator)
        let stream = Self.stream(of: frames)
        let bytes = stream.indices.map { stream[$0...$0] }
        #expect(try await decodeByAppending(bytes) == frames)
        #expect(try await decodeInBatches(bytes) == frames)
    }

    @Test("Random chunkings of a large stream", arguments: 0..<6)
    func randomChunkings(seed: Int) async throws {
        var generator = FrameGenerator(seed: 1_000 + UInt64(seed))
        let frames = await Self.frames(400, from: &generator)
        let stream = Self.stream(of: frames)
        var random = SplitMix64(seed: UInt64(seed))
        // Small chunks for some seeds, read-buffer-sized ones for others.
        let maxChunk = [7, 100, 1_500, 16_384, 65_536, 300_000][seed]
        var chunks: [ArraySlice<UInt8>] = []
        var start = 0
        while start < stream.count {
            let end = Swift.min(stream.count, start + Int.random(in: 1...maxChunk, using: &random))
            chunks.append(stream[start..<end])
            start = end
        }
        #expect(try await decodeInBatches(chunks) == frames)
        #expect(try await decodeByAppending(chunks) == frames)
    }

    @Test("The whole stream in one call")
    func wholeStream() async throws {
        var generator = FrameGenerator(seed: 5)
        let frames = await Self.frames(500, from: &generator)
        let stream = Self.stream(of: frames)
        #expect(try await decodeInBatches([stream[...]]) == frames)
        #expect(try await decodeByAppending([stream[...]]) == frames)
    }

    @Test("Mixing append/next and the batch path")
    func mixedFeeding() async throws {
        var generator = FrameGenerator(seed: 99, maxPayloadBytes: 2_000)
        let frames = await Self.frames(200, from: &generator)
        let stream = Self.stream(of: frames)
        var random = SplitMix64(seed: 99)
        var decoder = FrameDecoder()
        var decoded: [Frame] = []
        var pacer = Pacer()
        var start = 0
        while start < stream.count {
            await pacer.yieldIfDue()
            let end = Swift.min(stream.count, start + Int.random(in: 1...900, using: &random))
            let chunk = stream[start..<end]
            switch random.next() % 3 {
            case 0:
                // Append without draining: the batch path must take the buffered frames first.
                decoder.append(contentsOf: chunk)
            case 1:
                decoder.append(contentsOf: chunk)
                while let frame = try decoder.next() {
                    decoded.append(frame)
                }
            default:
                try decoder.decode(chunk, into: &decoded)
            }
            start = end
        }
        while let frame = try decoder.next() {
            decoded.append(frame)
        }
        #expect(decoded == frames)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.consumedByteCount == stream.count)
    }

    @Test("A frame of exactly the maximum size passes; the buffer stays within maxFrameBytes + 10")
    func maximumSizedFrame() async throws {
        let limit = 100_000
        // Push = 1a + varint(n) + n; Frame = 32 + varint(push) + push. Pick n so the frame is exactly `limit`.
        var payloadCount = limit - 8
        while Frame.push(Frame.Push(payload: [UInt8](repeating: 1, count: payloadCount))).encodedSize < limit {
            payloadCount += 1
        }
        let frame = Frame.push(Frame.Push(payload: [UInt8](repeating: 1, count: payloadCount)))
        #expect(frame.encodedSize == limit)
        let stream = Self.stream(of: [frame, frame, .ping(Frame.Ping(nonce: 1))])
        var random = SplitMix64(seed: 3)
        var chunks: [ArraySlice<UInt8>] = []
        var start = 0
        while start < stream.count {
            let end = Swift.min(stream.count, start + Int.random(in: 1...40_000, using: &random))
            chunks.append(stream[start..<end])
            start = end
        }
        #expect(try await decodeInBatches(chunks, maxFrameBytes: limit) == [frame, frame, .ping(Frame.Ping(nonce: 1))])
    }

    @Test("Complete frames are decoded straight from the input; only the tail is buffered")
    func tailOnly() throws {
        let frames: [Frame] = [.ping(Frame.Ping(nonce: 1)), .ping(Frame.Ping(nonce: 2))]
        let stream = Self.stream(of: frames)
        let partial = Frame.push(Frame.Push(topic: "t", payload: [1, 2, 3])).delimitedBytes
        var decoder = FrameDecoder()
        var decoded: [Frame] = []
        let input = stream + partial.prefix(5)
        try decoder.decode(input, into: &decoded)
        #expect(decoded == frames)
        #expect(decoder.bufferedByteCount == 5)
        #expect(decoder.consumedByteCount == stream.count)
        try decoder.decode(partial.dropFirst(5), into: &decoded)
        #expect(decoded == frames + [.push(Frame.Push(topic: "t", payload: [1, 2, 3]))])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("Empty input and zero-length frames")
    func emptyInput() throws {
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        try decoder.decode([UInt8](), into: &frames)
        decoder.append(contentsOf: [UInt8]())
        #expect(try decoder.next() == nil)
        try decoder.decode([UInt8]([0, 0]), into: &frames)
        #expect(frames == [.unrecognized, .unrecognized])
    }
}

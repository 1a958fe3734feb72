import LongLinkTestSupport
import LongLinkWire
import Testing

/// Errors from the incremental decoder: limits checked on the prefix alone, absolute offsets, and
/// a decoder that stays failed.
@Suite("Frame decoder errors", .sharedMachine)
struct FrameDecoderErrorTests {
    private let limit = Frame.defaultMaxFrameBytes

    @Test("A 2 GiB length prefix is rejected as soon as it is complete, before any body is kept")
    func twoGiBPrefix() throws {
        var decoder = FrameDecoder()
        decoder.append(contentsOf: hex("80 80 80 80"))
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == 4)
        decoder.append(contentsOf: hex("08") + [UInt8](repeating: 0, count: 1_000))
        let expected = WireFormatError(.frameTooLarge(length: 1 << 31, limit: limit), field: "frame", offset: 0)
        #expect(wireError { () throws(WireFormatError) in try decoder.next() } == expected)
        #expect(decoder.bufferedByteCount == 0)

        // The batch path: the prefix and some body in one read.
        var batch = FrameDecoder()
        var frames: [Frame] = []
        let error = wireError { () throws(WireFormatError) in
            try batch.decode(hex("80 80 80 80 08") + [UInt8](repeating: 0, count: 1_000), into: &frames)
        }
        #expect(error == expected)
        #expect(batch.bufferedByteCount == 0)
        #expect(frames.isEmpty)
    }

    @Test("A 10-byte prefix of UInt64.max is too large; 11 bytes or a 64-bit overflow is over-long")
    func hugePrefixes() {
        func batchError(_ bytes: [UInt8], chunked: Bool) -> WireFormatError? {
            var decoder = FrameDecoder()
            var frames: [Frame] = []
            return wireError { () throws(WireFormatError) in
                if chunked {
                    for byte in bytes {
                        try decoder.decode([byte], into: &frames)
                    }
                } else {
                    try decoder.decode(bytes, into: &frames)
                }
            }
        }
        for chunked in [false, true] {
            #expect(
                batchError(hex("ff ff ff ff ff ff ff ff ff 01"), chunked: chunked)
                    == WireFormatError(.frameTooLarge(length: .max, limit: limit), field: "frame", offset: 0))
            // Ten continuation bytes: over-long without waiting for an 11th.
            #expect(
                batchError(hex("ff ff ff ff ff ff ff ff ff ff"), chunked: chunked)
                    == WireFormatError(.overlongVarint, field: "frame", offset: 0))
            #expect(
                batchError(hex("80 80 80 80 80 80 80 80 80 80 01"), chunked: chunked)
                    == WireFormatError(.overlongVarint, field: "frame", offset: 0))
            #expect(
                batchError(hex("ff ff ff ff ff ff ff ff ff 02"), chunked: chunked)
                    == WireFormatError(.overlongVarint, field: "frame", offset: 0))
        }
    }

    @Test("A frame one byte over a custom limit; exactly at the limit is fine")
    func customLimit() throws {
        let atLimit = Frame.cancel(Frame.Cancel(requestID: "12345678"))  // 2 + 2 + 8 = 12 bytes
        #expect(atLimit.encodedSize == 12)
        var decoder = FrameDecoder(maxFrameBytes: 12)
        var frames: [Frame] = []
        try decoder.decode(atLimit.delimitedBytes, into: &frames)
        #expect(frames == [atLimit])
        let over = Frame.cancel(Frame.Cancel(requestID: "123456789"))
        #expect(
            wireError { () throws(WireFormatError) in try decoder.decode(over.delimitedBytes, into: &frames) }
                == WireFormatError(.frameTooLarge(length: 13, limit: 12), field: "frame", offset: 13))
    }

    @Test("Offsets are absolute stream offsets, however the stream is split")
    func absoluteOffsets() throws {
        // Ping (5 bytes), then a Request whose request_id is invalid UTF-8: prefix at 5, body at 6,
        // the request_id tag 2 bytes into the body.
        let good = Frame.ping(Frame.Ping(nonce: 1)).delimitedBytes
        #expect(good.count == 5)
        let stream = good + hex("05 1a 03 0a 01 ff")
        let expected = WireFormatError(.invalidUTF8, field: "Frame.request.request_id", offset: 8)
        for split in 0...stream.count {
            var batch = FrameDecoder()
            var frames: [Frame] = []
            let batchError = wireError { () throws(WireFormatError) in
                try batch.decode(stream[..<split], into: &frames)
                try batch.decode(stream[split...], into: &frames)
            }
            #expect(batchError == expected)
            #expect(frames == [.ping(Frame.Ping(nonce: 1))])

            var pull = FrameDecoder()
            var pulled: [Frame] = []
            let pullError = wireError { () throws(WireFormatError) in
                for part in [stream[..<split], stream[split...]] {
                    pull.append(contentsOf: part)
                    while let frame = try pull.next() {
                        pulled.append(frame)
                    }
                }
            }
            #expect(pullError == expected)
            #expect(pulled == [.ping(Frame.Ping(nonce: 1))])
        }
    }

    @Test("After an error the decoder stays failed and throws the same error")
    func staysFailed() {
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        let first = wireError { () throws(WireFormatError) in try decoder.decode(hex("02 08 01"), into: &frames) }
        let expected = WireFormatError(.wrongWireType(expected: 2, actual: 0), field: "Frame.hello", offset: 1)
        #expect(first == expected)
        let good = Frame.ping(Frame.Ping(nonce: 1)).delimitedBytes
        #expect(wireError { () throws(WireFormatError) in try decoder.decode(good, into: &frames) } == expected)
        decoder.append(contentsOf: good)
        #expect(decoder.bufferedByteCount == 0)
        #expect(wireError { () throws(WireFormatError) in try decoder.next() } == expected)
        #expect(frames.isEmpty)
    }

    @Test("A too-large prefix after good frames: the good frames are delivered first")
    func tooLargeAfterGoodFrames() {
        var decoder = FrameDecoder(maxFrameBytes: 100)
        var frames: [Frame] = []
        let good = Frame.sync(Frame.Sync()).delimitedBytes + Frame.ping(Frame.Ping(nonce: 7)).delimitedBytes
        let error = wireError { () throws(WireFormatError) in try decoder.decode(good + hex("c8 01"), into: &frames) }
        #expect(error == WireFormatError(.frameTooLarge(length: 200, limit: 100), field: "frame", offset: good.count))
        #expect(frames == [.sync(Frame.Sync()), .ping(Frame.Ping(nonce: 7))])
    }

    @Test("The buffer never holds more than one incomplete frame")
    func boundedBuffer() throws {
        let limit = 1_000
        var generator = FrameGenerator(seed: 77, maxPayloadBytes: 900)
        var stream: [UInt8] = []
        var expected: [Frame] = []
        while expected.count < 300 {
            let frame = generator.frame()
            guard frame.encodedSize <= limit else { continue }
            frame.encodeDelimited(into: &stream)
            expected.append(frame)
        }
        var random = SplitMix64(seed: 8)
        var decoder = FrameDecoder(maxFrameBytes: limit)
        var frames: [Frame] = []
        var start = 0
        while start < stream.count {
            let end = Swift.min(stream.count, start + Int.random(in: 1...5_000, using: &random))
            try decoder.decode(stream[start..<end], into: &frames)
            #expect(decoder.bufferedByteCount < limit + 10)
            start = end
        }
        #expect(frames == expected)
    }
}

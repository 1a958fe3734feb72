import LongLinkTestSupport
import LongLinkWire
import Testing

@Suite("Payload compression (zlib)", .sharedMachine)
struct CompressionTests {
    private let text = Array(String(repeating: "AAPL 189.50 190.10 188.90 189.95 1200;", count: 500).utf8)

    @Test func aPayloadRoundTripsAndShrinks() throws {
        let deflated = try #require(PayloadCompressor.deflate(text))
        #expect(deflated.count < text.count / 10)
        #expect(deflated.first == 0x78)  // a zlib header (RFC 1950), not raw DEFLATE
        #expect(try PayloadCompressor.inflate(deflated, limit: text.count) == text)
        let outgoing = PayloadCompression.zlib(minimumBytes: 1_024).outgoing(text)
        #expect(outgoing.compression == 1)
        #expect(
            try PayloadCompression.incoming(outgoing.payload, compression: 1, negotiated: true, limit: 1 << 20) == text)
    }

    /// The level reaches zlib (which records it in the header's second byte: 0x01 for the fastest,
    /// 0xDA for the smallest), both round-trip, and levels out of range are clamped.
    @Test func theLevelReachesZlibAndIsClamped() throws {
        let fast = PayloadCompression.zlib(minimumBytes: 1).outgoing(text).payload
        let small = PayloadCompression.zlib(minimumBytes: 1, level: 9).outgoing(text).payload
        #expect(fast[1] == 0x01 && small[1] == 0xDA)
        #expect(try PayloadCompressor.inflate(fast, limit: text.count) == text)
        #expect(try PayloadCompressor.inflate(small, limit: text.count) == text)
        #expect(PayloadCompression.zlib(level: 0).level == 1 && PayloadCompression.zlib(level: 42).level == 9)
    }

    @Test func smallOrIncompressiblePayloadsGoAsTheyAre() {
        let compression = PayloadCompression.zlib(minimumBytes: 1_024)
        #expect(compression.outgoing(Array(text.prefix(1_000))).compression == 0)
        var generator = SplitMix64(seed: 7)
        let noise = (0..<4_096).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        #expect(compression.outgoing(noise) == (noise, 0))
        #expect(PayloadCompression.disabled.outgoing(text).compression == 0)
    }

    /// 64 MiB of zeros compress to about 64 KiB; inflating stops at the limit instead of allocating.
    @Test func aCompressionBombIsAnErrorAtTheLimit() throws {
        let bomb = try #require(PayloadCompressor.deflate([UInt8](repeating: 0, count: 64 << 20), level: 9))
        #expect(bomb.count < 128 << 10)
        let error = #expect(throws: LongLinkError.self) { try PayloadCompressor.inflate(bomb, limit: 4 << 20) }
        #expect(error?.code == .compressionFailed)
        #expect(error?.message.contains("more than 4194304 bytes") == true)
    }

    /// The limit is the smallest of the frame limit, the ratio (never below 64 KiB) and the budget,
    /// and inflating past it stops with the limit that was passed.
    @Test func inflationStopsAtTheSmallestBound() throws {
        func limit(_ compressed: Int, frame: Int = 4 << 20, budget: Int = .max) -> InflationLimit {
            InflationLimit(compressedBytes: compressed, maxFrameBytes: frame, ratio: 64, budget: budget)
        }
        #expect(limit(4_000) == InflationLimit(bytes: 256_000, bound: .ratio, ratio: 64))
        #expect(limit(10) == InflationLimit(bytes: 64 << 10, bound: .ratio, ratio: 64))
        #expect(limit(1 << 20) == InflationLimit(bytes: 4 << 20, bound: .frame, ratio: 64))
        #expect(limit(4_000, budget: 1_000) == InflationLimit(bytes: 1_000, bound: .budget, ratio: 64))
        #expect(limit(.max / 2) == InflationLimit(bytes: 4 << 20, bound: .frame, ratio: 64))
        let bomb = try #require(PayloadCompressor.deflate([UInt8](repeating: 0, count: 4 << 20), level: 9))
        let bound = limit(bomb.count)
        #expect(bound.bound == .ratio)
        do {
            let inflated = try PayloadCompression.incoming(bomb, compression: 1, negotiated: true, within: bound)
            Issue.record("a bomb past the ratio inflated to \(inflated.count) bytes")
        } catch {
            guard case .exceeded(let passed) = error else {
                Issue.record("expected exceeded, got \(error.error)")
                return
            }
            #expect(passed == bound)
            #expect(error.error.code == .compressionFailed && error.error.message.contains("1:64"))
        }
        let text = Array(self.text.prefix(10_000))
        let deflated = try #require(PayloadCompressor.deflate(text))
        #expect(
            try PayloadCompression.incoming(deflated, compression: 1, negotiated: true, within: limit(deflated.count))
                == text)
    }

    @Test func corruptTruncatedOrTrailingDataIsAnError() throws {
        let deflated = try #require(PayloadCompressor.deflate(text))
        var corrupt = deflated
        corrupt[corrupt.count / 2] ^= 0xff
        for (bytes, expected) in [
            (corrupt, "corrupt"), (Array(deflated.dropLast(9)), "truncated"), (deflated + [1, 2, 3], "after its end"),
            ([1, 2, 3], "corrupt"),
        ] {
            let error = #expect(throws: LongLinkError.self) { try PayloadCompressor.inflate(bytes, limit: 1 << 20) }
            #expect(error?.code == .compressionFailed)
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        }
    }

    @Test func aCompressedPayloadOnALinkThatDidNotAgreeOrOfAnUnknownKindIsAnError() {
        for (compression, negotiated) in [(UInt32(1), false), (2, true)] {
            #expect(throws: LongLinkError.self) {
                try PayloadCompression.incoming(text, compression: compression, negotiated: negotiated, limit: 1 << 20)
            }
        }
    }

    @Test func theOfferIsReadFromMetadata() {
        #expect(PayloadCompressor.advertisesZlib(["longlink-compression": "zlib"]))
        #expect(PayloadCompressor.advertisesZlib(["longlink-compression": "zstd, zlib"]))
        #expect(!PayloadCompressor.advertisesZlib(["longlink-compression": "zstd"]))
        #expect(!PayloadCompressor.advertisesZlib([:]))
    }

    @Test func theCompressionFieldsAndWelcomeMetadataRoundTrip() throws {
        var request = Frame.Request(requestID: "1", method: "m", payload: [1])
        request.compression = 1
        var response = Frame.Response(requestID: "1", payload: [2])
        response.compression = 1
        var push = Frame.Push(seq: 3, topic: "t", payload: [3])
        push.compression = 1
        var welcome = Frame.Welcome(serverID: "s")
        welcome.metadata = ["longlink-compression": "zlib"]
        for frame in [Frame.request(request), .response(response), .push(push), .welcome(welcome)] {
            var bytes: [UInt8] = []
            frame.encode(into: &bytes)
            #expect(bytes.count == frame.encodedSize)
            #expect(try Frame(decoding: bytes) == frame)
        }
    }
}

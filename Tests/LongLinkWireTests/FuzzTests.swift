import LongLinkTestSupport
import LongLinkWire
import Testing

/// Thousands of random and mutated inputs: decoding must succeed or throw a `WireFormatError`,
/// never trap. (Typed throws make "only `WireFormatError`" a compile-time fact; these tests are
/// about traps, bounds and consistency.) Whatever decodes must re-encode to something that
/// decodes to the same frame.
///
/// Serialized: its loops are CPU-bound, so its cases run one at a time (each yielding, see `Pacer`)
/// rather than all at once queueing ahead of every other test's work on the two cooperative threads.
@Suite("Fuzzing", .sharedMachine, .serialized)
struct FuzzTests {
    /// Valid encodings with a few random mutations each, made one at a time as they are consumed
    /// (so that a test can yield between them).
    private struct MutatedInputs: Sequence, IteratorProtocol {
        private var generator: FrameGenerator
        private var random: SplitMix64
        private var remaining: Int

        init(seed: UInt64, count: Int) {
            generator = FrameGenerator(seed: seed, maxPayloadBytes: 200)
            random = SplitMix64(seed: ~seed)
            remaining = count
        }

        mutating func next() -> [UInt8]? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            var bytes = generator.frame().encodedBytes
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                FuzzTests.mutate(&bytes, using: &random)
            }
            return bytes
        }
    }

    fileprivate static func mutate(_ bytes: inout [UInt8], using random: inout SplitMix64) {
        let interesting: [UInt8] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x0b, 0x0c, 0x0e, 0x0f, 0xc3, 0xed]
        switch random.next() % 7 {
        case 0 where !bytes.isEmpty:
            let index = Int.random(in: bytes.indices, using: &random)
            bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
        case 1 where !bytes.isEmpty:
            bytes[Int.random(in: bytes.indices, using: &random)] = interesting.randomElement(using: &random)!
        case 2:
            bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
        case 3 where !bytes.isEmpty:
            bytes.remove(at: Int.random(in: bytes.indices, using: &random))
        case 4:
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
        case 5 where !bytes.isEmpty:
            // Duplicate a range (repeated fields, merged messages).
            let start = Int.random(in: bytes.indices, using: &random)
            let end = Int.random(in: start...bytes.count, using: &random)
            bytes.insert(contentsOf: bytes[start..<end], at: Int.random(in: 0...bytes.count, using: &random))
        default:
            bytes.append(contentsOf: interesting.randomElement(using: &random).map { [$0, 0xff, 0x01] }!)
        }
    }

    private static func randomInputs(seed: UInt64, count: Int) -> [[UInt8]] {
        var random = SplitMix64(seed: seed)
        var generator = FrameGenerator(seed: seed)
        return (0..<count).map { _ in generator.bytes(count: Int.random(in: 0...64, using: &random)) }
    }

    /// Decodes one input; if it decodes, the frame must survive a round trip.
    private func check(_ input: [UInt8]) {
        let decoded: Frame
        do throws(WireFormatError) {
            decoded = try Frame(decoding: input)
        } catch {
            #expect(error.offset >= 0 && error.offset <= input.count, "\(error) for \(input)")
            return
        }
        let reencoded = decoded.encodedBytes
        #expect(reencoded.count == decoded.encodedSize)
        #expect((try? Frame(decoding: reencoded)) == decoded, "\(input)")
    }

    @Test("Random byte strings", arguments: 0..<4)
    func randomBytes(seed: Int) async {
        // These loops are pure CPU: they yield to the rest of the test run as they go (see `Pacer`).
        var pacer = Pacer()
        for input in Self.randomInputs(seed: 0xF0_0000 + UInt64(seed), count: 5_000) {
            check(input)
            await pacer.yieldIfDue()
        }
    }

    @Test("Mutated valid frames", arguments: 0..<4)
    func mutatedFrames(seed: Int) async {
        var pacer = Pacer()
        for input in MutatedInputs(seed: 0xAB_0000 + UInt64(seed), count: 5_000) {
            check(input)
            await pacer.yieldIfDue()
        }
    }

    @Test("Random streams through the decoder with a small limit and random chunking", arguments: 0..<4)
    func decoderStreams(seed: Int) async {
        var random = SplitMix64(seed: 0xDEC0_0000 + UInt64(seed))
        let limit = 64
        var pacer = Pacer()
        for round in 0..<300 {
            await pacer.yieldIfDue()
            // A stream of (mostly) framed mutated messages, with some garbage thrown in.
            var stream: [UInt8] = []
            for input in MutatedInputs(seed: UInt64(seed * 1_000 + round), count: 8) {
                if random.next() % 10 == 0 {
                    stream.append(contentsOf: Self.randomInputs(seed: random.next(), count: 1)[0])
                } else {
                    var length = UInt64(input.count)
                    while length >= 0x80 {
                        stream.append(UInt8(truncatingIfNeeded: length) | 0x80)
                        length >>= 7
                    }
                    stream.append(UInt8(length))
                    stream.append(contentsOf: input)
                }
                await pacer.yieldIfDue()
            }
            var batch = FrameDecoder(maxFrameBytes: limit)
            var pull = FrameDecoder(maxFrameBytes: limit)
            var batchFrames: [Frame] = []
            var pullFrames: [Frame] = []
            var batchError: WireFormatError?
            var pullError: WireFormatError?
            var start = 0
            while start < stream.count {
                let end = Swift.min(stream.count, start + Int.random(in: 1...40, using: &random))
                if batchError == nil {
                    do throws(WireFormatError) {
                        try batch.decode(stream[start..<end], into: &batchFrames)
                    } catch {
                        batchError = error
                    }
                    #expect(batch.bufferedByteCount < limit + 10)
                }
                pull.append(contentsOf: stream[start..<end])
                do throws(WireFormatError) {
                    while let frame = try pull.next() {
                        pullFrames.append(frame)
                    }
                } catch {
                    pullError = error
                }
                start = end
                await pacer.yieldIfDue()
            }
            // Both ways of feeding agree on the frames and on the error.
            #expect(batchFrames == pullFrames)
            #expect(batchError == pullError)
            if let batchError {
                #expect(batchError.offset >= 0 && batchError.offset < stream.count)
            }
        }
    }
}

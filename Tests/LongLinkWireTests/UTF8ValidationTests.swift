import LongLinkTestSupport
import Testing

@testable import LongLinkWire

/// The reader checks UTF-8 by decoding with repair and comparing with the input; this checks that
/// trick against the standard library's own validating initialiser.
@Suite("UTF-8 validation", .sharedMachine)
struct UTF8ValidationTests {
    private func agree(_ bytes: [UInt8]) -> Bool {
        let expected = String(validating: bytes, as: UTF8.self)
        let actual = bytes.withUnsafeBytes { ProtobufReader.validatedString($0) }
        switch (expected, actual) {
        case (nil, nil): return true
        case (let expected?, let actual?): return expected.utf8.elementsEqual(actual.utf8)
        default: return false
        }
    }

    @Test("Agrees with String(validating:as:) on random and nearly-valid bytes")
    func differential() async {
        var random = SplitMix64(seed: 0x07F8)
        var generator = FrameGenerator(seed: 0x07F8)
        // Bytes that start, continue or break multi-byte sequences.
        let pieces: [[UInt8]] = [
            [0x41], [0x00], [0x7F], [0xC3, 0xA9], [0xE4, 0xBB, 0xB7], [0xF0, 0x9F, 0x98, 0x80], [0x80], [0xBF],
            [0xC0], [0xC1], [0xC2], [0xE0, 0x80], [0xED, 0xA0], [0xF0, 0x9F, 0x98], [0xF4, 0x90], [0xF5], [0xFF],
            [0xEF, 0xBF, 0xBD],
        ]
        var pacer = Pacer()
        for round in 0..<20_000 {
            await pacer.yieldIfDue()
            var bytes: [UInt8]
            if round.isMultiple(of: 2) {
                bytes = generator.bytes(count: Int.random(in: 0...24, using: &random))
            } else {
                bytes = []
                for _ in 0..<Int.random(in: 0...12, using: &random) {
                    bytes += pieces.randomElement(using: &random)!
                }
            }
            #expect(agree(bytes), "\(bytes)")
        }
        // Long valid text, and the same with one bad byte at every position class.
        let text = Array(String(repeating: "价格 é 😀 abc", count: 100).utf8)
        #expect(agree(text))
        for index in stride(from: 0, to: text.count, by: 37) {
            var broken = text
            broken[index] = 0xFF
            #expect(agree(broken))
        }
    }
}

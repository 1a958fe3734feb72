import LongLinkTestSupport
import Testing

@testable import LongLinkWire

@Suite("Request frames written from a numeric id")
struct RequestEncodingTests {
    /// Both encodings of one request, after `prefix`: the general path (the frame built with the id
    /// as a string) and the direct one.
    private func encodings(
        _ number: UInt64, _ method: String, _ payload: [UInt8], _ timeout: UInt32, _ metadata: [String: String],
        after prefix: [UInt8] = []
    ) -> (general: [UInt8], direct: [UInt8]) {
        var general = prefix
        Frame.request(
            Frame.Request(
                requestID: String(number), method: method, payload: payload, timeoutMilliseconds: timeout,
                metadata: metadata)
        ).encodeDelimited(into: &general)
        var direct = prefix
        Frame.encodeDelimitedRequest(
            requestNumber: number, method: method, payload: payload, timeoutMilliseconds: timeout,
            metadata: metadata, into: &direct)
        return (general, direct)
    }

    static let numbers: [UInt64] = [0, 1, 9, 10, 99, 100, 12_345, (1 << 46) - 1, 1 << 46, UInt64.max - 1, .max]

    @Test("A reply's id maps back to the number it was written from", arguments: numbers)
    func idsMapBack(number: UInt64) {
        #expect(Frame.requestNumber(fromID: String(number)) == number)
    }

    @Test("An id that no number is written as maps to nothing")
    func otherIdsMapToNothing() {
        for id in [
            "", "+7", "-7", "07", "00", " 7", "7 ", "7a", "a7", "1e3", "٣", "18446744073709551616",
            "99999999999999999999", "184467440737095516150",
        ] {
            #expect(Frame.requestNumber(fromID: id) == nil, "\(id)")
        }
        // Random ids: exactly the canonical decimal strings map back.
        var random = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let length = random.next(below: 22)
            // Digits, and now and then the character after "9".
            let bytes = (0..<length).map { _ in UInt8(ascii: "0") + UInt8(random.next(below: 11)) }
            let id = String(decoding: bytes, as: UTF8.self)
            let expected = UInt64(id).flatMap { String($0) == id ? $0 : nil }
            #expect(Frame.requestNumber(fromID: id) == expected, "\(id)")
        }
    }

    @Test("The same bytes as the general encoder", arguments: numbers)
    func sameBytes(number: UInt64) {
        let cases: [(String, [UInt8], UInt32, [String: String])] = [
            ("echo", Array(0..<16), 5_000, [:]),
            ("", [], 0, [:]),
            ("room.enter/é中", Array(repeating: 7, count: 200), .max, ["trace": "abc", "é": "", "": "v"]),
            ("m", Array(repeating: 1, count: 70_000), 1, ["k": "v"]),
        ]
        for (method, payload, timeout, metadata) in cases {
            for prefix in [[], [0xFF, 0x00]] as [[UInt8]] {
                let both = encodings(number, method, payload, timeout, metadata, after: prefix)
                #expect(both.direct == both.general)
            }
        }
    }

    @Test("Random ids and fields round-trip through the decoder")
    func randomRoundTrips() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let number = random.next() >> UInt64(random.next(below: 64))
            let payload = (0..<random.next(below: 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let timeout = UInt32(truncatingIfNeeded: random.next() >> UInt64(random.next(below: 64)))
            let both = encodings(number, "method", payload, timeout, [:])
            let bytes = both.direct
            #expect(bytes == both.general)
            var decoder = FrameDecoder()
            var frames: [Frame] = []
            try bytes.withUnsafeBytes { try decoder.decode($0, into: &frames) }
            guard case .request(let request) = frames.first else {
                Issue.record("not a request: \(frames)")
                continue
            }
            #expect(UInt64(request.requestID) == number)
            #expect(request.payload == payload && request.timeoutMilliseconds == timeout)
        }
    }

    @Test("Digit counts")
    func digitCounts() {
        #expect(Frame.decimalDigitCount(0) == 1)
        #expect(Frame.decimalDigitCount(9) == 1)
        #expect(Frame.decimalDigitCount(10) == 2)
        #expect(Frame.decimalDigitCount(UInt64.max) == 20)
    }
}

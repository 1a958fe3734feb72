import LongLinkTestSupport
import Testing

@testable import LongLinkWire

@Suite("Request ids read back as numbers", .sharedMachine)
struct RequestIDTests {
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
}

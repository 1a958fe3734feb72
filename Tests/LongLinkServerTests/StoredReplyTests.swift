import LongLinkWire
import LongLinkTestSupport
import Testing

@testable import LongLinkServer

@Suite("Stored replies", .sharedMachine)
struct StoredReplyTests {
    @Test("a stored reply gives back the same payload and status, inline or not")
    func roundTripsOnBothSidesOfTheInlineLimit() {
        let limit = StoredReply.inlineCapacity
        for size in [0, 1, 7, 8, 9, limit - 1, limit, limit + 1, 1_000] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
            for status in [nil, Frame.Status(code: .notFound, message: "no such room")] {
                let original = Frame.Response(requestID: "42", payload: payload, status: status)
                let stored = StoredReply(original)
                // The request id is not kept: a replay answers a copy under its own id.
                #expect(stored.response == Frame.Response(payload: payload, status: status), "size \(size)")
            }
        }
    }
}

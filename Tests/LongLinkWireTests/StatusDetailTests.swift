import LongLinkWire
import LongLinkTestSupport
import Testing

/// `Status.detail` (field 3): its bytes, its round trip, and the one value clients act on.
@Suite("Status detail", .sharedMachine)
struct StatusDetailTests {
    private func response(code: StatusCode, detail: UInt32) -> Frame.Response {
        var status = Frame.Status(code: code, message: "m")
        status.detail = detail
        return Frame.Response(requestID: "9", status: status)
    }

    @Test("OUTCOME_UNKNOWN is field 3 of Status, and survives a round trip")
    func bytesAndRoundTrip() throws {
        let frame = Frame.response(response(code: .unknown, detail: Frame.Status.outcomeUnknownDetail))
        // Response{1: "9", 3: Status{1: 2, 2: "m", 3: 1}}
        #expect(
            frame.encodedBytes == [0x22, 0x0c, 0x0a, 0x01, 0x39, 0x1a, 0x07, 0x08, 0x02, 0x12, 0x01, 0x6d, 0x18, 0x01])
        #expect(try Frame(decoding: frame.encodedBytes) == frame)
    }

    @Test("UNKNOWN with OUTCOME_UNKNOWN is outcomeUnknown; without it, or with another code, it is not")
    func errorCodes() {
        let marked = LongLinkError(status: response(code: .unknown, detail: 1).status!)
        #expect(marked.code == .outcomeUnknown)
        #expect(marked.code.status == .unknown)
        #expect(marked.isRemote)
        #expect(LongLinkError(status: response(code: .unknown, detail: 0).status!).code == .unknown)
        #expect(LongLinkError(status: response(code: .internalError, detail: 1).status!).code == .internalError)
        #expect(LongLinkError(status: response(code: .unknown, detail: 7).status!).code == .unknown)
        #expect("\(LongLinkError.Code.outcomeUnknown)" == "outcomeUnknown")
    }
}

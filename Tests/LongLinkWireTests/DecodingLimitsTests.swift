import LongLinkWire
import LongLinkTestSupport
import Testing

@Suite("Decoding limits", .sharedMachine)
struct DecodingLimitsTests {
    private static func decode(_ frame: Frame, limits: Frame.DecodingLimits) -> Result<[Frame], WireFormatError> {
        var bytes: [UInt8] = []
        frame.encodeDelimited(into: &bytes)
        var decoder = FrameDecoder(limits: limits)
        var frames: [Frame] = []
        return bytes.withUnsafeBytes { raw in
            do throws(WireFormatError) {
                try decoder.decode(raw, into: &frames)
                return .success(frames)
            } catch {
                return .failure(error)
            }
        }
    }

    private static func kind(_ result: Result<[Frame], WireFormatError>) -> WireFormatError.Kind? {
        guard case .failure(let error) = result else { return nil }
        return error.kind
    }

    @Test func metadataMapsAreBoundedInHelloAndRequest() {
        let limits = Frame.DecodingLimits(maxMapEntries: 3)
        let three = ["a": "1", "b": "2", "c": "3"]
        var four = three
        four["d"] = "4"
        #expect(Self.kind(Self.decode(.hello(Frame.Hello(clientID: "c", metadata: three)), limits: limits)) == nil)
        #expect(
            Self.kind(Self.decode(.hello(Frame.Hello(clientID: "c", metadata: four)), limits: limits))
                == .tooManyElements(limit: 3))
        #expect(
            Self.kind(Self.decode(.request(Frame.Request(requestID: "1", metadata: four)), limits: limits))
                == .tooManyElements(limit: 3))
        #expect(Self.kind(Self.decode(.hello(Frame.Hello(clientID: "c", metadata: four)), limits: .unlimited)) == nil)
    }

    /// Keys and values together: 8 bytes fit a bound of 8, one more byte does not, in every map.
    @Test func metadataMapsAreBoundedInBytes() {
        let limits = Frame.DecodingLimits(maxMapBytes: 8)
        let eight = ["ab": "12", "cd": "34"]
        let nine = ["ab": "12", "cd": "345"]
        #expect(Self.kind(Self.decode(.hello(Frame.Hello(clientID: "c", metadata: eight)), limits: limits)) == nil)
        var welcome = Frame.Welcome(serverID: "s")
        welcome.metadata = nine
        for frame in [
            Frame.hello(Frame.Hello(clientID: "c", metadata: nine)), .welcome(welcome),
            .request(Frame.Request(requestID: "1", metadata: nine)),
        ] {
            #expect(Self.kind(Self.decode(frame, limits: limits)) == .tooManyElements(limit: 8), "\(frame)")
        }
        #expect(Self.kind(Self.decode(.hello(Frame.Hello(clientID: "c", metadata: nine)), limits: .unlimited)) == nil)
    }

    @Test func ackSeqsAreBoundedPackedAndUnpacked() {
        let limits = Frame.DecodingLimits(maxRepeatedValues: 4)
        #expect(Self.kind(Self.decode(.ack(Frame.Ack(seqs: [1, 2, 3, 4])), limits: limits)) == nil)
        #expect(
            Self.kind(Self.decode(.ack(Frame.Ack(seqs: [1, 2, 3, 4, 5])), limits: limits)) == .tooManyElements(limit: 4)
        )
        // Unpacked: five varint fields of Ack.seqs (tag 08).
        let unpacked: [UInt8] = [0x3a, 0x0a, 0x08, 1, 0x08, 2, 0x08, 3, 0x08, 4, 0x08, 5]
        var decoder = FrameDecoder(limits: limits)
        var frames: [Frame] = []
        let error = ([UInt8(unpacked.count)] + unpacked).withUnsafeBytes { raw -> WireFormatError? in
            do throws(WireFormatError) {
                try decoder.decode(raw, into: &frames)
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.kind == .tooManyElements(limit: 4))
        #expect(error?.field == "Frame.ack.seqs")
    }
}

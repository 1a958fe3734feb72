import LongLinkWire
import LongLinkTestSupport
import Testing

/// Forward compatibility and proto3 semantics: unknown fields and frame kinds are skipped,
/// `seqs` is read packed or unpacked, duplicate fields follow the proto3 rules.
@Suite("Compatibility and proto3 rules", .sharedMachine)
struct CompatibilityTests {
    private func decode(_ bytes: String) throws -> Frame {
        try Frame(decoding: hex(bytes))
    }

    /// An unknown field of every wire type: field 15 varint, 16 fixed64, 17 length-delimited, 18 fixed32.
    private static let unknownFields = "78 96 01  81 01 01 02 03 04 05 06 07 08  8a 01 02 aa bb  95 01 01 02 03 04"

    @Test("Unknown fields of every wire type are skipped, at every level")
    func unknownFields() throws {
        let unknown = Self.unknownFields
        // 24 bytes of unknown fields, between and around the known ones.
        #expect(hex(unknown).count == 24)
        // In Frame, before the body, and inside Ping.
        #expect(try decode("\(unknown) 4a 1a \(unknown) 08 07") == .ping(Frame.Ping(nonce: 7)))
        // In Request and in one of its map entries.
        let request = try decode("1a 23 12 01 6d 2a 1e 0a 01 6b \(unknown) 12 01 76")
        #expect(request == .request(Frame.Request(method: "m", metadata: ["k": "v"])))
        // In Status.
        #expect(
            try decode("22 1c 1a 1a 08 05 \(unknown)")
                == .response(Frame.Response(status: Frame.Status(code: .notFound))))
        // In Sync, which has no fields at all.
        #expect(try decode("42 18 \(unknown)") == .sync(Frame.Sync()))
    }

    @Test("Unknown frame kinds and bodiless frames decode as unrecognized")
    func unknownFrameKinds() throws {
        // Field 99, length-delimited (tag 99 << 3 | 2 = 794 = 9a 06).
        #expect(try decode("9a 06 02 08 01") == .unrecognized)
        // Only unknown fields.
        #expect(try decode(Self.unknownFields) == .unrecognized)
        #expect(try decode("") == .unrecognized)
        // An unknown kind after a known one does not clear it.
        #expect(try decode("4a 02 08 01 9a 06 00") == .ping(Frame.Ping(nonce: 1)))
        // Through the decoder: an empty frame (length 0) and a frame of an unknown kind.
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        try decoder.decode(hex("00  05 9a 06 02 08 01  04 4a 02 08 01"), into: &frames)
        #expect(frames == [.unrecognized, .unrecognized, .ping(Frame.Ping(nonce: 1))])
    }

    @Test("Ack.seqs is read packed, unpacked, and mixed")
    func repeatedSeqs() throws {
        #expect(try decode("3a 07 08 01 08 ac 02 08 00") == .ack(Frame.Ack(seqs: [1, 300, 0])))
        #expect(
            try decode("3a 0b 0a 03 01 ac 02 08 03 0a 02 04 05") == .ack(Frame.Ack(seqs: [1, 300, 3, 4, 5])))
        #expect(try decode("3a 02 0a 00") == .ack(Frame.Ack(seqs: [])))
        // A varint cut by the end of the packed run.
        #expect(
            wireError { () throws(WireFormatError) in try Frame(decoding: hex("3a 04 0a 02 01 80")) }
                == WireFormatError(.truncatedVarint, field: "Frame.ack.seqs", offset: 5))
    }

    @Test("A scalar seen twice keeps the last value")
    func lastScalarWins() throws {
        #expect(try decode("4a 04 08 01 08 02") == .ping(Frame.Ping(nonce: 2)))
        #expect(try decode("2a 06 0a 01 61 0a 01 62") == .cancel(Frame.Cancel(requestID: "b")))
        #expect(try decode("32 06 1a 01 01 1a 01 02") == .push(Frame.Push(payload: [2])))
        // A repeated map key keeps its last value.
        #expect(
            try decode("1a 10 2a 06 0a 01 6b 12 01 31 2a 06 0a 01 6b 12 01 32")
                == .request(Frame.Request(metadata: ["k": "2"])))
    }

    @Test("The same body field twice is merged; a different one replaces it")
    func oneofRules() throws {
        // request{request_id "a"} then request{method "m"}: one request with both.
        #expect(
            try decode("1a 03 0a 01 61 1a 03 12 01 6d")
                == .request(Frame.Request(requestID: "a", method: "m")))
        // request then ping: the ping wins; ping then request: the request wins, with nothing of the ping.
        #expect(try decode("1a 03 0a 01 61 4a 02 08 05") == .ping(Frame.Ping(nonce: 5)))
        #expect(try decode("4a 02 08 05 1a 03 0a 01 61") == .request(Frame.Request(requestID: "a")))
        // request, ping, request: the second request starts afresh.
        #expect(
            try decode("1a 03 0a 01 61 4a 02 08 05 1a 03 12 01 6d") == .request(Frame.Request(method: "m")))
        // Two status sub-messages in one response are merged field by field.
        #expect(
            try decode("22 0a 1a 02 08 05 1a 04 12 02 6e 6f")
                == .response(Frame.Response(status: Frame.Status(code: .notFound, message: "no"))))
        // Two response bodies, each with a status: merged too.
        #expect(
            try decode("22 04 1a 02 08 05 22 07 0a 01 78 1a 02 08 06")
                == .response(Frame.Response(requestID: "x", status: Frame.Status(code: .alreadyExists))))
    }

    @Test("Absent fields are the proto3 defaults, not the Swift initialisers' defaults")
    func absentFields() throws {
        // Hello() and Welcome() default to version 1 in Swift; on the wire an absent version is 0.
        #expect(try decode("0a 00") == .hello(Frame.Hello(version: 0)))
        #expect(try decode("12 00") == .welcome(Frame.Welcome(version: 0)))
        #expect(try decode("22 00") == .response(Frame.Response(status: nil)))
        // A map entry with no key or no value means "".
        #expect(try decode("1a 02 2a 00") == .request(Frame.Request(metadata: ["": ""])))
        #expect(try decode("1a 05 2a 03 12 01 76") == .request(Frame.Request(metadata: ["": "v"])))
    }

    @Test("Integer conversions follow protobuf: uint32 keeps the low 32 bits; any non-zero bool is true")
    func integerConversions() throws {
        // max_frame_bytes = 2^32 + 5 (85 80 80 80 10).
        #expect(try decode("12 06 20 85 80 80 80 10") == .welcome(Frame.Welcome(version: 0, maxFrameBytes: 5)))
        #expect(try decode("5a 02 18 02") == .goAway(Frame.GoAway(reconnect: true)))
        // Status codes this version does not name are kept.
        #expect(
            try decode("5a 03 08 e7 07")
                == .goAway(Frame.GoAway(code: StatusCode(rawValue: 999))))
    }
}

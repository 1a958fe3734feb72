import LongLinkTestSupport
import LongLinkWire
import Testing

/// Malformed input must be a clean `WireFormatError` naming the kind, the field and the offset.
@Suite("Malformed input", .sharedMachine)
struct MalformedInputTests {
    /// Decodes `bytes` as one message and returns the error.
    private func messageError(_ bytes: String) -> WireFormatError? {
        wireError { () throws(WireFormatError) in try Frame(decoding: hex(bytes)) }
    }

    @Test("A truncated varint")
    func truncatedVarint() {
        // Ping.nonce starts at offset 3 and ends with the region, mid-varint.
        #expect(messageError("4a 02 08 80") == WireFormatError(.truncatedVarint, field: "Frame.ping.nonce", offset: 3))
        // The tag itself is cut.
        #expect(messageError("80") == WireFormatError(.truncatedVarint, field: "Frame", offset: 0))
        // The length of Frame.ping is missing.
        #expect(messageError("4a") == WireFormatError(.truncatedVarint, field: "Frame.ping", offset: 1))
    }

    @Test("An over-long varint: 11 bytes, or a 10th byte that overflows 64 bits")
    func overlongVarint() throws {
        #expect(
            messageError("4a 0c 08 ff ff ff ff ff ff ff ff ff ff 01")
                == WireFormatError(.overlongVarint, field: "Frame.ping.nonce", offset: 3))
        #expect(
            messageError("4a 0b 08 ff ff ff ff ff ff ff ff ff 02")
                == WireFormatError(.overlongVarint, field: "Frame.ping.nonce", offset: 3))
        // The longest valid varints: UInt64.max, and a padded zero.
        #expect(try Frame(decoding: hex("4a 0b 08 ff ff ff ff ff ff ff ff ff 01")) == .ping(Frame.Ping(nonce: .max)))
        #expect(try Frame(decoding: hex("4a 0b 08 80 80 80 80 80 80 80 80 80 00")) == .ping(Frame.Ping(nonce: 0)))
    }

    @Test("A length beyond the buffer: every truncation of a frame is an error")
    func lengthBeyondBuffer() async {
        let request = hex(
            "1a 27 0a 01 37 12 0a 72 6f 6f 6d 2e 65 6e 74 65 72 1a 03 01 02 03 20 ac 02 2a 06 0a 01 61 12 01 31 2a 06 0a 01 62 12 01 32"
        )
        #expect(
            wireError { () throws(WireFormatError) in try Frame(decoding: Array(request.dropLast())) }
                == WireFormatError(.truncatedField, field: "Frame.request", offset: 0))
        var generator = FrameGenerator(seed: 21, maxPayloadBytes: 300)
        var pacer = Pacer()
        for _ in 0..<60 {
            let bytes = generator.frame().encodedBytes
            for count in bytes.indices.dropFirst() {
                await pacer.yieldIfDue()
                let error = wireError { () throws(WireFormatError) in try Frame(decoding: Array(bytes.prefix(count))) }
                #expect(error?.kind == .truncatedField || error?.kind == .truncatedVarint)
            }
        }
    }

    @Test("A known field with the wrong wire type")
    func wrongWireType() {
        #expect(
            messageError("1a 02 10 05")
                == WireFormatError(.wrongWireType(expected: 2, actual: 0), field: "Frame.request.method", offset: 2))
        #expect(
            messageError("08 01")
                == WireFormatError(.wrongWireType(expected: 2, actual: 0), field: "Frame.hello", offset: 0))
        #expect(
            messageError("4a 03 0a 01 00")
                == WireFormatError(.wrongWireType(expected: 0, actual: 2), field: "Frame.ping.nonce", offset: 2))
        #expect(
            messageError("4a 05 0d 00 00 00 00")
                == WireFormatError(.wrongWireType(expected: 0, actual: 5), field: "Frame.ping.nonce", offset: 2))
        #expect(
            messageError("3a 09 09 00 00 00 00 00 00 00 00")
                == WireFormatError(.wrongWireType(expected: 2, actual: 1), field: "Frame.ack.seqs", offset: 2))
        #expect(
            messageError("22 02 18 01")
                == WireFormatError(.wrongWireType(expected: 2, actual: 0), field: "Frame.response.status", offset: 2))
    }

    @Test("A nested length that runs past its parent (though not past the buffer)")
    func nestedLengthPastParent() {
        #expect(
            messageError("1a 03 12 05 61 62 63 64 65")
                == WireFormatError(.truncatedField, field: "Frame.request.method", offset: 2))
        #expect(
            messageError("1a 04 2a 02 0a 05 61 62 63 64 65")
                == WireFormatError(.truncatedField, field: "Frame.request.metadata.key", offset: 4))
        #expect(
            messageError("22 02 1a 05 08 01 12 01 61")
                == WireFormatError(.truncatedField, field: "Frame.response.status", offset: 2))
        // Fixed-width unknown fields are bounded by their parent too (field 15, which Ping does not
        // have: fields 1 and 2 are its nonce and heartbeat_ms).
        #expect(
            messageError("4a 03 79 00 00 00 00 00 00 00 00")
                == WireFormatError(.truncatedField, field: "Frame.ping", offset: 2))
        #expect(
            messageError("4a 03 7d 00 00 00 00") == WireFormatError(.truncatedField, field: "Frame.ping", offset: 2))
    }

    @Test("Groups and the undefined wire types 6 and 7", arguments: [UInt8(3), 4, 6, 7])
    func invalidWireTypes(wireType: UInt8) {
        let tag = 1 << 3 | wireType
        #expect(
            wireError { () throws(WireFormatError) in try Frame(decoding: [tag, 0, 0]) }
                == WireFormatError(.invalidWireType(wireType), field: "Frame", offset: 0))
        // Nested, and on an unknown field number, the same.
        #expect(
            wireError { () throws(WireFormatError) in try Frame(decoding: [0x4a, 0x02, tag, 0]) }
                == WireFormatError(.invalidWireType(wireType), field: "Frame.ping", offset: 2))
        #expect(
            wireError { () throws(WireFormatError) in try Frame(decoding: [0x98 | wireType, 0x06, 0]) }
                == WireFormatError(.invalidWireType(wireType), field: "Frame", offset: 0))
    }

    @Test("Field number 0, and above 2^29 - 1")
    func invalidFieldNumbers() throws {
        #expect(messageError("02 00") == WireFormatError(.invalidFieldNumber(0), field: "Frame", offset: 0))
        #expect(messageError("00") == WireFormatError(.invalidFieldNumber(0), field: "Frame", offset: 0))
        #expect(messageError("4a 02 00 00") == WireFormatError(.invalidFieldNumber(0), field: "Frame.ping", offset: 2))
        #expect(
            messageError("80 80 80 80 10 00")
                == WireFormatError(.invalidFieldNumber(1 << 29), field: "Frame", offset: 0))
        // 2^29 - 1 is the largest field number: an unknown field, skipped.
        #expect(try Frame(decoding: hex("f8 ff ff ff 0f 00")) == .unrecognized)
    }

    @Test(
        "Invalid UTF-8 in every kind of string",
        arguments: ["ff", "c3", "c0 80", "ed a0 80", "f4 90 80 80", "e2 82", "80"])
    func invalidUTF8(sequence: String) {
        let bad = hex(sequence)
        let count = UInt8(bad.count)
        func error(_ bytes: [UInt8]) -> WireFormatError? {
            wireError { () throws(WireFormatError) in try Frame(decoding: bytes) }
        }
        #expect(
            error([0x1a, count + 2, 0x0a, count] + bad)
                == WireFormatError(.invalidUTF8, field: "Frame.request.request_id", offset: 2))
        #expect(
            error([0x1a, count + 4, 0x2a, count + 2, 0x0a, count] + bad)
                == WireFormatError(.invalidUTF8, field: "Frame.request.metadata.key", offset: 4))
        #expect(
            error([0x0a, count + 4, 0x22, count + 2, 0x12, count] + bad)
                == WireFormatError(.invalidUTF8, field: "Frame.hello.metadata.value", offset: 4))
        #expect(
            error([0x22, count + 4, 0x1a, count + 2, 0x12, count] + bad)
                == WireFormatError(.invalidUTF8, field: "Frame.response.status.message", offset: 4))
        #expect(
            error([0x5a, count + 2, 0x12, count] + bad)
                == WireFormatError(.invalidUTF8, field: "Frame.go_away.reason", offset: 2))
        // Bytes fields take anything.
        #expect(error([0x32, count + 2, 0x1a, count] + bad) == nil)
    }

    @Test("NUL and every scalar class are valid UTF-8")
    func validUTF8() throws {
        let frame = try Frame(decoding: hex("2a 0c 0a 0a 00 c3 a9 e4 bb b7 f0 9f 98 80"))
        #expect(frame == .cancel(Frame.Cancel(requestID: "\u{0}é价😀")))
    }
}

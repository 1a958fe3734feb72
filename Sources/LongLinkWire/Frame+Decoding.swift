// Decoding frames from protobuf (proto3). The rules, from the protocol document:
// - unknown fields of wire types 0, 1, 2 and 5 are skipped; groups (3, 4) and types 6, 7 are malformed;
// - a known field with a wire type its schema does not allow is malformed;
// - a scalar seen twice keeps the last value; a message seen twice is merged; a `body` field other
//   than the one set so far replaces it (oneof: the last one wins);
// - `repeated uint64 seqs` is read packed or unpacked; map entries with no key or value mean "";
// - strings must be valid UTF-8.
// The per-message code is generated from the schema (Generated/Frame+Decoding.generated.swift).

extension Frame {
    /// Decodes one `Frame` message (no length prefix) that fills `bytes` exactly.
    ///
    /// A frame with no body, or whose body is a kind this version does not know, decodes as
    /// ``unrecognized``. Error offsets count from the start of `bytes`.
    ///
    /// - Throws: ``WireFormatError`` when the bytes are not a valid `Frame`.
    public init(decoding bytes: UnsafeRawBufferPointer) throws(WireFormatError) {
        var reader = ProtobufReader(bytes)
        try self.init(reading: &reader)
    }

    /// Decodes one `Frame` message (no length prefix) that fills `bytes` exactly.
    ///
    /// - Throws: ``WireFormatError`` when the bytes are not a valid `Frame`.
    public init(decoding bytes: [UInt8]) throws(WireFormatError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(WireFormatError) -> Frame in try Frame(decoding: raw) }
        }
        self = try result.get()
    }
}

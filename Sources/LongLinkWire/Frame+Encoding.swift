// Encoding frames as protobuf (proto3): field numbers from `longlink.proto`, defaults left out,
// map keys in UTF-8 byte order so that equal frames always encode to equal bytes. The per-message
// code is generated from the schema (Generated/Frame+Encoding.generated.swift).

extension Frame {
    /// The size in bytes of the frame's protobuf encoding, without the length prefix.
    public var encodedSize: Int {
        guard let (fieldNumber, bodySize) = bodyFieldNumberAndSize else { return 0 }
        return ProtobufWriter.delimitedFieldSize(fieldNumber, length: bodySize)
    }

    /// Appends the frame's protobuf encoding (the `Frame` message, no length prefix) to `buffer`.
    public func encode(into buffer: inout [UInt8]) {
        guard let (fieldNumber, bodySize) = bodyFieldNumberAndSize else { return }
        let size = ProtobufWriter.delimitedFieldSize(fieldNumber, length: bodySize)
        ProtobufWriter.append(to: &buffer, reserving: size) { writer in
            writeBody(fieldNumber, bodySize, to: &writer)
        }
    }

    /// Appends the frame as it goes on the wire: its encoded size as a varint, then its encoding.
    public func encodeDelimited(into buffer: inout [UInt8]) {
        guard let (fieldNumber, bodySize) = bodyFieldNumberAndSize else {
            buffer.append(0)
            return
        }
        let size = ProtobufWriter.delimitedFieldSize(fieldNumber, length: bodySize)
        ProtobufWriter.append(to: &buffer, reserving: ProtobufWriter.varintSize(UInt64(size)) + size) { writer in
            writer.writeVarint(UInt64(size))
            writeBody(fieldNumber, bodySize, to: &writer)
        }
    }
}

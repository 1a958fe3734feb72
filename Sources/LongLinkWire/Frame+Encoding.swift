// Encoding frames as protobuf (proto3): field numbers from `longlink.proto`, defaults left out,
// map keys in UTF-8 byte order so that equal frames always encode to equal bytes.

extension Frame {
    /// The size in bytes of the frame's protobuf encoding, without the length prefix.
    public var encodedSize: Int {
        guard let (fieldNumber, bodySize) = fieldNumberAndBodySize else { return 0 }
        return ProtobufWriter.delimitedFieldSize(fieldNumber, length: bodySize)
    }

    /// Appends the frame's protobuf encoding (the `Frame` message, no length prefix) to `buffer`.
    public func encode(into buffer: inout [UInt8]) {
        guard let (fieldNumber, bodySize) = fieldNumberAndBodySize else { return }
        let size = ProtobufWriter.delimitedFieldSize(fieldNumber, length: bodySize)
        ProtobufWriter.append(to: &buffer, reserving: size) { writer in
            writeBody(fieldNumber, bodySize, to: &writer)
        }
    }

    /// Appends the frame as it goes on the wire: its encoded size as a varint, then its encoding.
    public func encodeDelimited(into buffer: inout [UInt8]) {
        guard let (fieldNumber, bodySize) = fieldNumberAndBodySize else {
            buffer.append(0)
            return
        }
        let size = ProtobufWriter.delimitedFieldSize(fieldNumber, length: bodySize)
        ProtobufWriter.append(to: &buffer, reserving: ProtobufWriter.varintSize(UInt64(size)) + size) { writer in
            writer.writeVarint(UInt64(size))
            writeBody(fieldNumber, bodySize, to: &writer)
        }
    }

    /// The number of the `body` field that is set and the size of its message, or nil for ``unrecognized``.
    private var fieldNumberAndBodySize: (Int, Int)? {
        switch self {
        case .hello(let hello): (1, hello.wireSize)
        case .welcome(let welcome): (2, welcome.wireSize)
        case .request(let request): (3, request.wireSize)
        case .response(let response): (4, response.wireSize)
        case .cancel(let cancel): (5, cancel.wireSize)
        case .push(let push): (6, push.wireSize)
        case .ack(let ack): (7, ack.wireSize)
        case .sync: (8, 0)
        case .ping(let ping): (9, ping.wireSize)
        case .pong(let pong): (10, pong.wireSize)
        case .goAway(let goAway): (11, goAway.wireSize)
        case .unrecognized: nil
        }
    }

    /// Writes the `body` field: it is present (even when its message is empty) because it is set.
    private func writeBody(_ fieldNumber: Int, _ bodySize: Int, to writer: inout ProtobufWriter) {
        writer.writeDelimitedHeader(fieldNumber, length: bodySize)
        switch self {
        case .hello(let hello): hello.write(to: &writer)
        case .welcome(let welcome): welcome.write(to: &writer)
        case .request(let request): request.write(to: &writer)
        case .response(let response): response.write(to: &writer)
        case .cancel(let cancel): cancel.write(to: &writer)
        case .push(let push): push.write(to: &writer)
        case .ack(let ack): ack.write(to: &writer)
        case .sync: break
        case .ping(let ping): ping.write(to: &writer)
        case .pong(let pong): pong.write(to: &writer)
        case .goAway(let goAway): goAway.write(to: &writer)
        case .unrecognized: break
        }
    }
}

extension Frame.Hello {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(version)) + ProtobufWriter.stringFieldSize(2, clientID)
            + ProtobufWriter.varintFieldSize(3, UInt64(heartbeatMilliseconds))
            + ProtobufWriter.stringMapFieldSize(4, metadata)
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, version)
        writer.writeStringField(2, clientID)
        writer.writeUInt32Field(3, heartbeatMilliseconds)
        writer.writeStringMapField(4, metadata)
    }
}

extension Frame.Welcome {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(version)) + ProtobufWriter.stringFieldSize(2, serverID)
            + ProtobufWriter.varintFieldSize(3, UInt64(heartbeatMilliseconds))
            + ProtobufWriter.varintFieldSize(4, UInt64(maxFrameBytes))
            + ProtobufWriter.varintFieldSize(5, UInt64(loadPermille))
            + ProtobufWriter.varintFieldSize(6, UInt64(dedupeWindowMilliseconds))
            + ProtobufWriter.varintFieldSize(7, UInt64(maxInFlight)) + ProtobufWriter.stringMapFieldSize(8, metadata)
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, version)
        writer.writeStringField(2, serverID)
        writer.writeUInt32Field(3, heartbeatMilliseconds)
        writer.writeUInt32Field(4, maxFrameBytes)
        writer.writeUInt32Field(5, loadPermille)
        writer.writeUInt32Field(6, dedupeWindowMilliseconds)
        writer.writeUInt32Field(7, maxInFlight)
        writer.writeStringMapField(8, metadata)
    }
}

extension Frame.Request {
    var wireSize: Int {
        ProtobufWriter.stringFieldSize(1, requestID) + ProtobufWriter.stringFieldSize(2, method)
            + ProtobufWriter.bytesFieldSize(3, payload)
            + ProtobufWriter.varintFieldSize(4, UInt64(timeoutMilliseconds))
            + ProtobufWriter.stringMapFieldSize(5, metadata) + ProtobufWriter.varintFieldSize(6, UInt64(compression))
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, requestID)
        writer.writeStringField(2, method)
        writer.writeBytesField(3, payload)
        writer.writeUInt32Field(4, timeoutMilliseconds)
        writer.writeStringMapField(5, metadata)
        writer.writeUInt32Field(6, compression)
    }
}

extension Frame.Status {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(code.rawValue)) + ProtobufWriter.stringFieldSize(2, message)
            + ProtobufWriter.varintFieldSize(3, UInt64(detail))
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, code.rawValue)
        writer.writeStringField(2, message)
        writer.writeUInt32Field(3, detail)
    }
}

extension Frame.Response {
    var wireSize: Int {
        var size = ProtobufWriter.stringFieldSize(1, requestID) + ProtobufWriter.bytesFieldSize(2, payload)
        if let status {
            // A present status is written even when it is OK with no message: presence is the signal.
            size += ProtobufWriter.delimitedFieldSize(3, length: status.wireSize)
        }
        return size + ProtobufWriter.varintFieldSize(4, UInt64(compression))
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, requestID)
        writer.writeBytesField(2, payload)
        if let status {
            writer.writeDelimitedHeader(3, length: status.wireSize)
            status.write(to: &writer)
        }
        writer.writeUInt32Field(4, compression)
    }
}

extension Frame.Cancel {
    var wireSize: Int {
        ProtobufWriter.stringFieldSize(1, requestID)
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, requestID)
    }
}

extension Frame.Push {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, seq) + ProtobufWriter.stringFieldSize(2, topic)
            + ProtobufWriter.bytesFieldSize(3, payload) + ProtobufWriter.varintFieldSize(4, epoch)
            + ProtobufWriter.varintFieldSize(5, UInt64(compression))
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, seq)
        writer.writeStringField(2, topic)
        writer.writeBytesField(3, payload)
        writer.writeVarintField(4, epoch)
        writer.writeUInt32Field(5, compression)
    }
}

extension Frame.Ack {
    var wireSize: Int {
        ProtobufWriter.packedUInt64FieldSize(1, seqs) + ProtobufWriter.varintFieldSize(2, epoch)
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writePackedUInt64Field(1, seqs)
        writer.writeVarintField(2, epoch)
    }
}

extension Frame.Ping {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, nonce)
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, nonce)
    }
}

extension Frame.Pong {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, nonce) + ProtobufWriter.varintFieldSize(2, UInt64(loadPermille))
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, nonce)
        writer.writeUInt32Field(2, loadPermille)
    }
}

extension Frame.GoAway {
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(code.rawValue)) + ProtobufWriter.stringFieldSize(2, reason)
            + ProtobufWriter.varintFieldSize(3, reconnect ? 1 : 0)
            + ProtobufWriter.varintFieldSize(4, UInt64(retryAfterMilliseconds))
    }

    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, code.rawValue)
        writer.writeStringField(2, reason)
        writer.writeBoolField(3, reconnect)
        writer.writeUInt32Field(4, retryAfterMilliseconds)
    }
}

// Generated from proto/longlink/v1/longlink.proto by Scripts/generate-codec.py. Do not edit:
// change the schema or the generator, then run `python3 Scripts/generate-codec.py` (CI fails when this
// file differs from what the generator writes).

extension Frame {
    /// The number of the `body` field that is set and the size of its message, or nil for ``unrecognized``.
    var bodyFieldNumberAndSize: (Int, Int)? {
        switch self {
        case .hello(let hello): (1, hello.wireSize)
        case .welcome(let welcome): (2, welcome.wireSize)
        case .request(let request): (3, request.wireSize)
        case .response(let response): (4, response.wireSize)
        case .cancel(let cancel): (5, cancel.wireSize)
        case .push(let push): (6, push.wireSize)
        case .ack(let ack): (7, ack.wireSize)
        case .sync(let sync): (8, sync.wireSize)
        case .ping(let ping): (9, ping.wireSize)
        case .pong(let pong): (10, pong.wireSize)
        case .goAway(let goAway): (11, goAway.wireSize)
        case .unrecognized: nil
        }
    }

    /// Writes the `body` field: it is present (even when its message is empty) because it is set.
    func writeBody(_ fieldNumber: Int, _ bodySize: Int, to writer: inout ProtobufWriter) {
        writer.writeDelimitedHeader(fieldNumber, length: bodySize)
        switch self {
        case .hello(let hello): hello.write(to: &writer)
        case .welcome(let welcome): welcome.write(to: &writer)
        case .request(let request): request.write(to: &writer)
        case .response(let response): response.write(to: &writer)
        case .cancel(let cancel): cancel.write(to: &writer)
        case .push(let push): push.write(to: &writer)
        case .ack(let ack): ack.write(to: &writer)
        case .sync(let sync): sync.write(to: &writer)
        case .ping(let ping): ping.write(to: &writer)
        case .pong(let pong): pong.write(to: &writer)
        case .goAway(let goAway): goAway.write(to: &writer)
        case .unrecognized: break
        }
    }
}

extension Frame.Hello {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(version))
            + ProtobufWriter.stringFieldSize(2, clientID)
            + ProtobufWriter.varintFieldSize(3, UInt64(heartbeatMilliseconds))
            + ProtobufWriter.stringMapFieldSize(4, metadata)
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, version)
        writer.writeStringField(2, clientID)
        writer.writeUInt32Field(3, heartbeatMilliseconds)
        writer.writeStringMapField(4, metadata)
    }
}

extension Frame.Welcome {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(version))
            + ProtobufWriter.stringFieldSize(2, serverID)
            + ProtobufWriter.varintFieldSize(3, UInt64(heartbeatMilliseconds))
            + ProtobufWriter.varintFieldSize(4, UInt64(maxFrameBytes))
            + ProtobufWriter.varintFieldSize(5, UInt64(loadPermille))
            + ProtobufWriter.varintFieldSize(6, UInt64(dedupeWindowMilliseconds))
            + ProtobufWriter.varintFieldSize(7, UInt64(maxInFlight))
            + ProtobufWriter.stringMapFieldSize(8, metadata)
    }

    /// Appends the message's fields (no tag or length) to `writer`.
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
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.stringFieldSize(1, requestID)
            + ProtobufWriter.stringFieldSize(2, method)
            + ProtobufWriter.bytesFieldSize(3, payload)
            + ProtobufWriter.varintFieldSize(4, UInt64(timeoutMilliseconds))
            + ProtobufWriter.stringMapFieldSize(5, metadata)
            + ProtobufWriter.varintFieldSize(6, UInt64(compression))
            + ProtobufWriter.varintFieldSize(7, resent ? 1 : 0)
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, requestID)
        writer.writeStringField(2, method)
        writer.writeBytesField(3, payload)
        writer.writeUInt32Field(4, timeoutMilliseconds)
        writer.writeStringMapField(5, metadata)
        writer.writeUInt32Field(6, compression)
        writer.writeBoolField(7, resent)
    }
}

extension Frame.Response {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        var size = 0
        size += ProtobufWriter.stringFieldSize(1, requestID)
        size += ProtobufWriter.bytesFieldSize(2, payload)
        if let status {
            // Present, it is written even when all its fields are defaults: presence is the signal.
            size += ProtobufWriter.delimitedFieldSize(3, length: status.wireSize)
        }
        size += ProtobufWriter.varintFieldSize(4, UInt64(compression))
        return size
    }

    /// Appends the message's fields (no tag or length) to `writer`.
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

extension Frame.Status {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(code.rawValue))
            + ProtobufWriter.stringFieldSize(2, message)
            + ProtobufWriter.varintFieldSize(3, UInt64(detail))
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, code.rawValue)
        writer.writeStringField(2, message)
        writer.writeUInt32Field(3, detail)
    }
}

extension Frame.Cancel {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.stringFieldSize(1, requestID)
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeStringField(1, requestID)
    }
}

extension Frame.Push {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, seq)
            + ProtobufWriter.stringFieldSize(2, topic)
            + ProtobufWriter.bytesFieldSize(3, payload)
            + ProtobufWriter.varintFieldSize(4, epoch)
            + ProtobufWriter.varintFieldSize(5, UInt64(compression))
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, seq)
        writer.writeStringField(2, topic)
        writer.writeBytesField(3, payload)
        writer.writeVarintField(4, epoch)
        writer.writeUInt32Field(5, compression)
    }
}

extension Frame.Ack {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.packedUInt64FieldSize(1, seqs)
            + ProtobufWriter.varintFieldSize(2, epoch)
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writePackedUInt64Field(1, seqs)
        writer.writeVarintField(2, epoch)
    }
}

extension Frame.Sync {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        0
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
    }
}

extension Frame.Ping {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, nonce)
            + ProtobufWriter.varintFieldSize(2, UInt64(heartbeatMilliseconds))
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, nonce)
        writer.writeUInt32Field(2, heartbeatMilliseconds)
    }
}

extension Frame.Pong {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, nonce)
            + ProtobufWriter.varintFieldSize(2, UInt64(loadPermille))
            + ProtobufWriter.varintFieldSize(3, UInt64(heartbeatMilliseconds))
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, nonce)
        writer.writeUInt32Field(2, loadPermille)
        writer.writeUInt32Field(3, heartbeatMilliseconds)
    }
}

extension Frame.GoAway {
    /// The size of the message's encoding, without a tag or length.
    var wireSize: Int {
        ProtobufWriter.varintFieldSize(1, UInt64(code.rawValue))
            + ProtobufWriter.stringFieldSize(2, reason)
            + ProtobufWriter.varintFieldSize(3, reconnect ? 1 : 0)
            + ProtobufWriter.varintFieldSize(4, UInt64(retryAfterMilliseconds))
    }

    /// Appends the message's fields (no tag or length) to `writer`.
    func write(to writer: inout ProtobufWriter) {
        writer.writeUInt32Field(1, code.rawValue)
        writer.writeStringField(2, reason)
        writer.writeBoolField(3, reconnect)
        writer.writeUInt32Field(4, retryAfterMilliseconds)
    }
}

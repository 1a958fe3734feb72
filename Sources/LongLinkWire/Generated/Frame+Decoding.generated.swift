// Generated from proto/longlink/v1/longlink.proto by Scripts/generate-codec.py. Do not edit:
// change the schema or the generator, then run `python3 Scripts/generate-codec.py` (CI fails when this
// file differs from what the generator writes).

extension Frame {
    /// Decodes the `Frame` message that fills the reader's region: a `body` field seen twice is
    /// merged, a `body` field other than the one set so far replaces it (oneof: the last one wins).
    init(reading reader: inout ProtobufReader) throws(WireFormatError) {
        var frame = Frame.unrecognized
        while let tag = try reader.readTag(in: "Frame") {
            switch tag.fieldNumber {
            case 1:
                var body = try reader.readMessageField(tag, field: "Frame.hello")
                var hello = if case .hello(let existing) = frame { existing } else { Frame.Hello(version: 0) }
                try hello.merge(from: &body)
                frame = .hello(hello)
            case 2:
                var body = try reader.readMessageField(tag, field: "Frame.welcome")
                var welcome = if case .welcome(let existing) = frame { existing } else { Frame.Welcome(version: 0) }
                try welcome.merge(from: &body)
                frame = .welcome(welcome)
            case 3:
                var body = try reader.readMessageField(tag, field: "Frame.request")
                var request = if case .request(let existing) = frame { existing } else { Frame.Request() }
                try request.merge(from: &body)
                frame = .request(request)
            case 4:
                var body = try reader.readMessageField(tag, field: "Frame.response")
                var response = if case .response(let existing) = frame { existing } else { Frame.Response() }
                try response.merge(from: &body)
                frame = .response(response)
            case 5:
                var body = try reader.readMessageField(tag, field: "Frame.cancel")
                var cancel = if case .cancel(let existing) = frame { existing } else { Frame.Cancel() }
                try cancel.merge(from: &body)
                frame = .cancel(cancel)
            case 6:
                var body = try reader.readMessageField(tag, field: "Frame.push")
                var push = if case .push(let existing) = frame { existing } else { Frame.Push() }
                try push.merge(from: &body)
                frame = .push(push)
            case 7:
                var body = try reader.readMessageField(tag, field: "Frame.ack")
                var ack = if case .ack(let existing) = frame { existing } else { Frame.Ack() }
                try ack.merge(from: &body)
                frame = .ack(ack)
            case 8:
                var body = try reader.readMessageField(tag, field: "Frame.sync")
                var sync = if case .sync(let existing) = frame { existing } else { Frame.Sync() }
                try sync.merge(from: &body)
                frame = .sync(sync)
            case 9:
                var body = try reader.readMessageField(tag, field: "Frame.ping")
                var ping = if case .ping(let existing) = frame { existing } else { Frame.Ping() }
                try ping.merge(from: &body)
                frame = .ping(ping)
            case 10:
                var body = try reader.readMessageField(tag, field: "Frame.pong")
                var pong = if case .pong(let existing) = frame { existing } else { Frame.Pong() }
                try pong.merge(from: &body)
                frame = .pong(pong)
            case 11:
                var body = try reader.readMessageField(tag, field: "Frame.go_away")
                var goAway = if case .goAway(let existing) = frame { existing } else { Frame.GoAway() }
                try goAway.merge(from: &body)
                frame = .goAway(goAway)
            default:
                try reader.skipField(tag, in: "Frame")
            }
        }
        self = frame
    }
}

extension Frame.Hello {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        var metadataBytes = 0
        while let tag = try reader.readTag(in: "Frame.hello") {
            switch tag.fieldNumber {
            case 1: version = try reader.readUInt32Field(tag, field: "Frame.hello.version")
            case 2: clientID = try reader.readStringField(tag, field: "Frame.hello.client_id")
            case 3: heartbeatMilliseconds = try reader.readUInt32Field(tag, field: "Frame.hello.heartbeat_ms")
            case 4:
                try reader.readStringMapEntry(
                    tag, into: &metadata, bytes: &metadataBytes, field: "Frame.hello.metadata")
            default: try reader.skipField(tag, in: "Frame.hello")
            }
        }
    }
}

extension Frame.Welcome {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        var metadataBytes = 0
        while let tag = try reader.readTag(in: "Frame.welcome") {
            switch tag.fieldNumber {
            case 1: version = try reader.readUInt32Field(tag, field: "Frame.welcome.version")
            case 2: serverID = try reader.readStringField(tag, field: "Frame.welcome.server_id")
            case 3: heartbeatMilliseconds = try reader.readUInt32Field(tag, field: "Frame.welcome.heartbeat_ms")
            case 4: maxFrameBytes = try reader.readUInt32Field(tag, field: "Frame.welcome.max_frame_bytes")
            case 5: loadPermille = try reader.readUInt32Field(tag, field: "Frame.welcome.load_permille")
            case 6: dedupeWindowMilliseconds = try reader.readUInt32Field(tag, field: "Frame.welcome.dedupe_window_ms")
            case 7: maxInFlight = try reader.readUInt32Field(tag, field: "Frame.welcome.max_in_flight")
            case 8:
                try reader.readStringMapEntry(
                    tag, into: &metadata, bytes: &metadataBytes, field: "Frame.welcome.metadata")
            default: try reader.skipField(tag, in: "Frame.welcome")
            }
        }
    }
}

extension Frame.Request {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        var metadataBytes = 0
        while let tag = try reader.readTag(in: "Frame.request") {
            switch tag.fieldNumber {
            case 1: requestID = try reader.readStringField(tag, field: "Frame.request.request_id")
            case 2: method = try reader.readStringField(tag, field: "Frame.request.method")
            case 3: payload = try reader.readBytesField(tag, field: "Frame.request.payload")
            case 4: timeoutMilliseconds = try reader.readUInt32Field(tag, field: "Frame.request.timeout_ms")
            case 5:
                try reader.readStringMapEntry(
                    tag, into: &metadata, bytes: &metadataBytes, field: "Frame.request.metadata")
            case 6: compression = try reader.readUInt32Field(tag, field: "Frame.request.compression")
            case 7: resent = try reader.readBoolField(tag, field: "Frame.request.resent")
            default: try reader.skipField(tag, in: "Frame.request")
            }
        }
    }
}

extension Frame.Response {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.response") {
            switch tag.fieldNumber {
            case 1: requestID = try reader.readStringField(tag, field: "Frame.response.request_id")
            case 2: payload = try reader.readBytesField(tag, field: "Frame.response.payload")
            case 3:
                var body = try reader.readMessageField(tag, field: "Frame.response.status")
                var merged = status ?? Frame.Status()
                try merged.merge(from: &body)
                status = merged
            case 4: compression = try reader.readUInt32Field(tag, field: "Frame.response.compression")
            default: try reader.skipField(tag, in: "Frame.response")
            }
        }
    }
}

extension Frame.Status {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.response.status") {
            switch tag.fieldNumber {
            case 1: code = StatusCode(rawValue: try reader.readUInt32Field(tag, field: "Frame.response.status.code"))
            case 2: message = try reader.readStringField(tag, field: "Frame.response.status.message")
            case 3: detail = try reader.readUInt32Field(tag, field: "Frame.response.status.detail")
            default: try reader.skipField(tag, in: "Frame.response.status")
            }
        }
    }
}

extension Frame.Cancel {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.cancel") {
            switch tag.fieldNumber {
            case 1: requestID = try reader.readStringField(tag, field: "Frame.cancel.request_id")
            default: try reader.skipField(tag, in: "Frame.cancel")
            }
        }
    }
}

extension Frame.Push {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.push") {
            switch tag.fieldNumber {
            case 1: seq = try reader.readVarintField(tag, field: "Frame.push.seq")
            case 2: topic = try reader.readStringField(tag, field: "Frame.push.topic")
            case 3: payload = try reader.readBytesField(tag, field: "Frame.push.payload")
            case 4: epoch = try reader.readVarintField(tag, field: "Frame.push.epoch")
            case 5: compression = try reader.readUInt32Field(tag, field: "Frame.push.compression")
            default: try reader.skipField(tag, in: "Frame.push")
            }
        }
    }
}

extension Frame.Ack {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.ack") {
            switch tag.fieldNumber {
            case 1: try reader.readRepeatedUInt64Field(tag, into: &seqs, field: "Frame.ack.seqs")
            case 2: epoch = try reader.readVarintField(tag, field: "Frame.ack.epoch")
            default: try reader.skipField(tag, in: "Frame.ack")
            }
        }
    }
}

extension Frame.Sync {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.sync") {
            try reader.skipField(tag, in: "Frame.sync")
        }
    }
}

extension Frame.Ping {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.ping") {
            switch tag.fieldNumber {
            case 1: nonce = try reader.readVarintField(tag, field: "Frame.ping.nonce")
            case 2: heartbeatMilliseconds = try reader.readUInt32Field(tag, field: "Frame.ping.heartbeat_ms")
            default: try reader.skipField(tag, in: "Frame.ping")
            }
        }
    }
}

extension Frame.Pong {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.pong") {
            switch tag.fieldNumber {
            case 1: nonce = try reader.readVarintField(tag, field: "Frame.pong.nonce")
            case 2: loadPermille = try reader.readUInt32Field(tag, field: "Frame.pong.load_permille")
            case 3: heartbeatMilliseconds = try reader.readUInt32Field(tag, field: "Frame.pong.heartbeat_ms")
            default: try reader.skipField(tag, in: "Frame.pong")
            }
        }
    }
}

extension Frame.GoAway {
    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps
    /// the last value, a message seen twice is merged, unknown fields are skipped.
    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {
        while let tag = try reader.readTag(in: "Frame.go_away") {
            switch tag.fieldNumber {
            case 1: code = StatusCode(rawValue: try reader.readUInt32Field(tag, field: "Frame.go_away.code"))
            case 2: reason = try reader.readStringField(tag, field: "Frame.go_away.reason")
            case 3: reconnect = try reader.readBoolField(tag, field: "Frame.go_away.reconnect")
            case 4: retryAfterMilliseconds = try reader.readUInt32Field(tag, field: "Frame.go_away.retry_after_ms")
            default: try reader.skipField(tag, in: "Frame.go_away")
            }
        }
    }
}

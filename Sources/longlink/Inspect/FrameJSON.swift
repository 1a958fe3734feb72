import Foundation
import LongLinkCLISupport
import LongLinkWire

/// One frame as one line of JSON, the output format of `longlink inspect`:
///
///     {"offset":0,"size":12,"frame":{"request":{"requestId":"1","method":"echo","payload":"aGk="}},
///      "notes":{"kind":"request","payloadText":"hi"}}
///
/// `frame` is the canonical proto3 JSON mapping of `longlink.v1.Frame`, so that any protobuf
/// runtime parses it back into the same message (`json_format.Parse` in Python, `protojson` in Go):
/// lowerCamelCase field names, fields in field-number order, fields at their default value left
/// out (0, "", false, empty bytes, maps and lists), 64-bit integers as decimal strings, 32-bit ones
/// as numbers, bytes as padded base64, maps as objects (keys sorted). The body is always present,
/// even when empty (`{"sync":{}}`), and so is a `Response.status` that is on the wire; a frame with
/// no body, or a kind v1 does not know, is `{}`. Nothing else is ever put inside `frame`.
///
/// Beside it: `offset`, where the frame's length prefix starts in the stream; `size`, the bytes
/// the frame takes there, its prefix included (the next frame starts at `offset + size`); and
/// `notes`, for people: `kind` (the body's proto field name, or `unrecognized`), `payloadText` when
/// the payload is UTF-8 without control characters other than tab, CR and LF, and `statusName`
/// (Response) or `codeName` (GoAway), the gRPC name of the code.
enum FrameJSON {
    static func line(for frame: Frame, offset: Int, size: Int) -> String {
        var object = JSONObject()
        object.add("offset", offset)
        object.add("size", size)
        object.addRaw("frame", message(frame))
        object.addRaw("notes", notes(frame))
        return object.text()
    }

    /// The proto3 JSON mapping of `frame`.
    static func message(_ frame: Frame) -> String {
        var body = JSONObject()
        let name: String
        switch frame {
        case .hello(let hello):
            name = "hello"
            body.addNumber("version", hello.version)
            body.addString("clientId", hello.clientID)
            body.addNumber("heartbeatMs", hello.heartbeatMilliseconds)
            body.addMap("metadata", hello.metadata)
        case .welcome(let welcome):
            name = "welcome"
            body.addNumber("version", welcome.version)
            body.addString("serverId", welcome.serverID)
            body.addNumber("heartbeatMs", welcome.heartbeatMilliseconds)
            body.addNumber("maxFrameBytes", welcome.maxFrameBytes)
            body.addNumber("loadPermille", welcome.loadPermille)
            body.addNumber("dedupeWindowMs", welcome.dedupeWindowMilliseconds)
            body.addNumber("maxInFlight", welcome.maxInFlight)
            body.addMap("metadata", welcome.metadata)
        case .request(let request):
            name = "request"
            body.addString("requestId", request.requestID)
            body.addString("method", request.method)
            body.addBytes("payload", request.payload)
            body.addNumber("timeoutMs", request.timeoutMilliseconds)
            body.addMap("metadata", request.metadata)
            body.addNumber("compression", request.compression)
            if request.resent { body.add("resent", true) }
        case .response(let response):
            name = "response"
            body.addString("requestId", response.requestID)
            body.addBytes("payload", response.payload)
            if let status = response.status {
                // A present status is part of the message even when it is empty (OK, no message).
                var statusObject = JSONObject()
                statusObject.addNumber("code", status.code.rawValue)
                statusObject.addString("message", status.message)
                statusObject.addNumber("detail", status.detail)
                body.addRaw("status", statusObject.text())
            }
            body.addNumber("compression", response.compression)
        case .cancel(let cancel):
            name = "cancel"
            body.addString("requestId", cancel.requestID)
        case .push(let push):
            name = "push"
            body.addUInt64("seq", push.seq)
            body.addString("topic", push.topic)
            body.addBytes("payload", push.payload)
            body.addUInt64("epoch", push.epoch)
            body.addNumber("compression", push.compression)
        case .ack(let ack):
            name = "ack"
            if !ack.seqs.isEmpty {
                body.addRaw("seqs", "[" + ack.seqs.map { "\"\($0)\"" }.joined(separator: ",") + "]")
            }
            body.addUInt64("epoch", ack.epoch)
        case .sync:
            name = "sync"
        case .ping(let ping):
            name = "ping"
            body.addUInt64("nonce", ping.nonce)
            body.addNumber("heartbeatMs", ping.heartbeatMilliseconds)
        case .pong(let pong):
            name = "pong"
            body.addUInt64("nonce", pong.nonce)
            body.addNumber("loadPermille", pong.loadPermille)
            body.addNumber("heartbeatMs", pong.heartbeatMilliseconds)
        case .goAway(let goAway):
            name = "goAway"
            body.addNumber("code", goAway.code.rawValue)
            body.addString("reason", goAway.reason)
            if goAway.reconnect { body.add("reconnect", true) }
            body.addNumber("retryAfterMs", goAway.retryAfterMilliseconds)
        case .unrecognized:
            return "{}"
        }
        var object = JSONObject()
        object.addRaw(name, body.text())
        return object.text()
    }

    /// The `notes` object: what a person wants to see that the mapping does not say directly.
    static func notes(_ frame: Frame) -> String {
        var notes = JSONObject()
        switch frame {
        case .hello: notes.add("kind", "hello")
        case .welcome: notes.add("kind", "welcome")
        case .request(let request):
            notes.add("kind", "request")
            addText(request.payload, to: &notes)
        case .response(let response):
            notes.add("kind", "response")
            addText(response.payload, to: &notes)
            if let status = response.status { notes.add("statusName", status.code.description) }
        case .cancel: notes.add("kind", "cancel")
        case .push(let push):
            notes.add("kind", "push")
            addText(push.payload, to: &notes)
        case .ack: notes.add("kind", "ack")
        case .sync: notes.add("kind", "sync")
        case .ping: notes.add("kind", "ping")
        case .pong: notes.add("kind", "pong")
        case .goAway(let goAway):
            notes.add("kind", "go_away")
            notes.add("codeName", goAway.code.description)
        case .unrecognized: notes.add("kind", "unrecognized")
        }
        return notes.text()
    }

    private static func addText(_ payload: [UInt8], to notes: inout JSONObject) {
        if !payload.isEmpty, let text = printableText(payload) {
            notes.add("payloadText", text)
        }
    }

    /// The payload as text when it is valid UTF-8 with no control characters but tab, CR and LF.
    static func printableText(_ payload: [UInt8]) -> String? {
        guard let text = String(validating: payload, as: UTF8.self) else { return nil }
        let printable = text.unicodeScalars.allSatisfy { scalar in
            switch scalar.value {
            case 0x09, 0x0A, 0x0D: true
            case 0x00..<0x20, 0x7F..<0xA0: false
            default: true
            }
        }
        return printable ? text : nil
    }
}

/// The proto3 JSON rules for scalar fields: a field at its default value is left out.
extension JSONObject {
    fileprivate mutating func addNumber(_ key: String, _ value: UInt32) {
        if value != 0 { add(key, value) }
    }

    /// 64-bit integers are strings in proto3 JSON (a double cannot hold every one).
    fileprivate mutating func addUInt64(_ key: String, _ value: UInt64) {
        if value != 0 { add(key, "\(value)") }
    }

    fileprivate mutating func addString(_ key: String, _ value: String) {
        if !value.isEmpty { add(key, value) }
    }

    fileprivate mutating func addBytes(_ key: String, _ value: [UInt8]) {
        if !value.isEmpty { add(key, Data(value).base64EncodedString()) }
    }

    fileprivate mutating func addMap(_ key: String, _ value: [String: String]) {
        if !value.isEmpty { add(key, value) }
    }
}

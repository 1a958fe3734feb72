import Foundation
import LongLinkWire

/// One frame as one line of JSON, the output format of `longlink inspect`.
///
/// Keys come in a fixed order: `offset` (the stream offset of the frame's length prefix), `kind`
/// (the proto field name of the body: `hello`, `welcome`, `request`, `response`, `cancel`, `push`,
/// `ack`, `sync`, `ping`, `pong`, `go_away`, or `unrecognized` for an empty frame or a body kind v1
/// does not know), then every field of the body in schema order under its proto name, default
/// values included. Bytes fields appear as `payload_base64`, followed by `payload_text` only when
/// the bytes are valid UTF-8 without control characters other than tab, CR and LF. Maps are
/// objects with sorted keys. A `Response` without a status has `"status":null`; a status is
/// `{"code":5,"name":"NOT_FOUND","message":"..."}`; `GoAway` carries `code` and `code_name`. 64-bit
/// numbers (`seq`, `nonce`) are written as exact JSON numbers.
enum FrameJSON {
    static func line(for frame: Frame, offset: Int) -> String {
        var object = JSONObject()
        object.add("offset", offset)
        switch frame {
        case .hello(let hello):
            object.add("kind", "hello")
            object.add("version", hello.version)
            object.add("client_id", hello.clientID)
            object.add("heartbeat_ms", hello.heartbeatMilliseconds)
            object.add("metadata", hello.metadata)
        case .welcome(let welcome):
            object.add("kind", "welcome")
            object.add("version", welcome.version)
            object.add("server_id", welcome.serverID)
            object.add("heartbeat_ms", welcome.heartbeatMilliseconds)
            object.add("max_frame_bytes", welcome.maxFrameBytes)
            object.add("load_permille", welcome.loadPermille)
            object.add("dedupe_window_ms", welcome.dedupeWindowMilliseconds)
        case .request(let request):
            object.add("kind", "request")
            object.add("request_id", request.requestID)
            object.add("method", request.method)
            addPayload(request.payload, to: &object)
            object.add("timeout_ms", request.timeoutMilliseconds)
            object.add("metadata", request.metadata)
        case .response(let response):
            object.add("kind", "response")
            object.add("request_id", response.requestID)
            addPayload(response.payload, to: &object)
            if let status = response.status {
                var statusObject = JSONObject()
                statusObject.add("code", status.code.rawValue)
                statusObject.add("name", status.code.description)
                statusObject.add("message", status.message)
                object.addRaw("status", statusObject.text())
            } else {
                object.addRaw("status", "null")
            }
        case .cancel(let cancel):
            object.add("kind", "cancel")
            object.add("request_id", cancel.requestID)
        case .push(let push):
            object.add("kind", "push")
            object.add("seq", push.seq)
            object.add("topic", push.topic)
            addPayload(push.payload, to: &object)
        case .ack(let ack):
            object.add("kind", "ack")
            object.addRaw("seqs", "[" + ack.seqs.map { "\($0)" }.joined(separator: ",") + "]")
        case .sync:
            object.add("kind", "sync")
        case .ping(let ping):
            object.add("kind", "ping")
            object.add("nonce", ping.nonce)
        case .pong(let pong):
            object.add("kind", "pong")
            object.add("nonce", pong.nonce)
            object.add("load_permille", pong.loadPermille)
        case .goAway(let goAway):
            object.add("kind", "go_away")
            object.add("code", goAway.code.rawValue)
            object.add("code_name", goAway.code.description)
            object.add("reason", goAway.reason)
            object.add("reconnect", goAway.reconnect)
            object.add("retry_after_ms", goAway.retryAfterMilliseconds)
        case .unrecognized:
            object.add("kind", "unrecognized")
        }
        return object.text()
    }

    private static func addPayload(_ payload: [UInt8], to object: inout JSONObject) {
        object.add("payload_base64", Data(payload).base64EncodedString())
        if let text = printableText(payload) {
            object.add("payload_text", text)
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

import LongLinkWire

// Framing and encoding (Protocol.md, "Framing", "Encoding rules", "Errors and malformed input"):
// frames independent of writes, empty and unknown frames ignored, bad input refused with GoAway.
extension ConformRule {
    static let framing: [ConformRule] = [
        ConformRule("framing.empty-frame-ignored", "an empty frame before Hello is ignored (Welcome follows Hello)") {
            context throws(ConformFailure) in
            let link = try context.connect()
            var bytes: [UInt8] = [0x00]
            Frame.hello(Frame.Hello(clientID: context.clientID("empty-frame"))).encodeDelimited(into: &bytes)
            try link.sendRaw(bytes)
            _ = try link.welcome()
        },
        ConformRule(
            "framing.frame-too-large",
            "a length prefix over Welcome.max_frame_bytes gets GoAway{RESOURCE_EXHAUSTED} without its body"
        ) { context throws(ConformFailure) in
            let (link, welcome) = try context.welcomed("too-large")
            let limit = welcome.maxFrameBytes == 0 ? Frame.defaultMaxFrameBytes : Int(welcome.maxFrameBytes)
            try link.sendRaw(Self.varint(UInt64(limit) + 1))
            try link.expectGoAway(.resourceExhausted)
        },
        ConformRule("framing.field-number-zero", "a frame with field number 0 gets GoAway{INVALID_ARGUMENT}") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("field-zero")
            // Tag 0x00: field 0, wire type 0, then a varint value.
            try link.sendRaw([0x02, 0x00, 0x01])
            try link.expectGoAway(.invalidArgument)
        },
        ConformRule("framing.wire-type-7", "a frame with wire type 7 gets GoAway{INVALID_ARGUMENT}") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("wire-type")
            // Tag 0x0F: field 1, wire type 7 (undefined).
            try link.sendRaw([0x02, 0x0F, 0x00])
            try link.expectGoAway(.invalidArgument)
        },
        ConformRule("framing.invalid-utf8", "invalid UTF-8 in a string field gets GoAway{INVALID_ARGUMENT}") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("utf8")
            // Request{request_id: "1", method: 0xFF}: 0xFF is never valid UTF-8.
            try link.sendRaw([0x08, 0x1A, 0x06, 0x0A, 0x01, 0x31, 0x12, 0x01, 0xFF])
            try link.expectGoAway(.invalidArgument)
        },
        ConformRule(
            "framing.ping-split", "a Ping split across two writes gets a Pong with its nonce and a load of 0...1000"
        ) { context throws(ConformFailure) in
            let (link, _) = try context.welcomed("ping-split")
            var bytes: [UInt8] = []
            Frame.ping(Frame.Ping(nonce: 0x5EED)).encodeDelimited(into: &bytes)
            try link.sendRaw(Array(bytes.prefix(2)))
            // Let the first part arrive alone (the server may read it by itself), then the rest.
            _ = link.frames(during: .milliseconds(50))
            try link.sendRaw(Array(bytes.dropFirst(2)))
            try Self.expectPong(on: link, nonce: 0x5EED)
        },
        ConformRule("framing.pings-merged", "two Pings in one write get two Pongs with their nonces") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("pings-merged")
            try link.send(.ping(Frame.Ping(nonce: 101)), .ping(Frame.Ping(nonce: 102)))
            try Self.expectPong(on: link, nonce: 101)
            try Self.expectPong(on: link, nonce: 102)
        },
        ConformRule("framing.unknown-fields-ignored", "unknown fields in a message are skipped") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("unknown-fields")
            // Ping{nonce: 7} with field 15 (varint 1), field 16 (bytes "x") and field 17 (fixed32).
            try link.sendRaw([0x10, 0x4A, 0x0E, 0x08, 0x07, 0x78, 0x01, 0x82, 0x01, 0x01, 0x78, 0x8D, 0x01, 0, 0, 0, 0])
            try Self.expectPong(on: link, nonce: 7)
        },
        ConformRule("framing.unknown-frame-kind-ignored", "a frame of an unknown kind is ignored") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("unknown-kind")
            // Frame field 100 (a kind from a newer version) holding {1: 1}; then a Ping.
            var bytes: [UInt8] = [0x05, 0xA2, 0x06, 0x02, 0x08, 0x01]
            Frame.ping(Frame.Ping(nonce: 8)).encodeDelimited(into: &bytes)
            try link.sendRaw(bytes)
            try Self.expectPong(on: link, nonce: 8)
        },
    ]

    /// Waits for the `Pong` to `nonce`, failing on a `GoAway`, a wrong nonce or a load above 1000.
    @discardableResult
    static func expectPong(on link: ConformLink, nonce: UInt64) throws(ConformFailure) -> Frame.Pong {
        let frame = try link.take("Pong{nonce: \(nonce)}") { frame in
            switch frame {
            case .pong, .goAway: true
            default: false
            }
        }
        guard case .pong(let pong) = frame else {
            throw ConformFailure("expected Pong{nonce: \(nonce)}, got \(ConformLink.text(frame))")
        }
        guard pong.nonce == nonce else {
            throw ConformFailure("expected Pong{nonce: \(nonce)}, got Pong{nonce: \(pong.nonce)}")
        }
        guard pong.loadPermille <= 1000 else {
            throw ConformFailure("Pong.load_permille is \(pong.loadPermille), above 1000")
        }
        return pong
    }

    /// `value` as a protobuf varint.
    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
        return bytes
    }
}

import LongLinkTestSupport
import LongLinkWire
import Testing

/// Frames checked byte for byte against encodings worked out by hand from the protobuf encoding
/// rules (tag = field << 3 | wire type; varints least significant group first), so the codec is
/// shown to speak protobuf and not only to agree with itself.
@Suite("Golden bytes", .sharedMachine)
struct GoldenBytesTests {
    struct Golden: Sendable, CustomTestStringConvertible {
        var name: String
        var frame: Frame
        var bytes: String

        var testDescription: String { name }
    }

    static let goldens: [Golden] = [
        // Frame.ping = field 9, wire type 2: 0x4a, length 2; Ping.nonce = field 1 varint: 08 01.
        Golden(name: "ping", frame: .ping(Frame.Ping(nonce: 1)), bytes: "4a 02 08 01"),
        // A set body is written even when its message is empty: Frame.sync = field 8 -> 0x42, length 0.
        Golden(name: "sync", frame: .sync(Frame.Sync()), bytes: "42 00"),
        // Hello.version 1 (08 01), client_id "c" (12 01 63); Frame.hello = field 1 -> 0x0a.
        Golden(name: "hello", frame: .hello(Frame.Hello(clientID: "c")), bytes: "0a 05 08 01 12 01 63"),
        // 15000 = 0x3a98 -> 98 75; 4194304 = 2^22 -> 80 80 80 02; zero fields are left out.
        Golden(
            name: "welcome",
            frame: .welcome(Frame.Welcome(serverID: "s1", heartbeatMilliseconds: 15_000, maxFrameBytes: 4_194_304)),
            bytes: "12 0e 08 01 12 02 73 31 18 98 75 20 80 80 80 02"),
        // request_id "7", method "room.enter", payload 01 02 03, timeout 300 (ac 02), metadata
        // entries in key order, each {key = field 1, value = field 2} under field 5 (0x2a).
        Golden(
            name: "request",
            frame: .request(
                Frame.Request(
                    requestID: "7", method: "room.enter", payload: [1, 2, 3], timeoutMilliseconds: 300,
                    metadata: ["b": "2", "a": "1"])),
            bytes: """
                1a 27
                0a 01 37
                12 0a 72 6f 6f 6d 2e 65 6e 74 65 72
                1a 03 01 02 03
                20 ac 02
                2a 06 0a 01 61 12 01 31
                2a 06 0a 01 62 12 01 32
                """),
        // A copy written again after a reconnection: resent (field 7, varint) = 1 is 38 01.
        Golden(
            name: "resent request",
            frame: .request(
                {
                    var request = Frame.Request(requestID: "7", method: "m")
                    request.resent = true
                    return request
                }()),
            bytes: "1a 08 0a 01 37 12 01 6d 38 01"),
        // An empty map value is left out of its entry: 2a 03 0a 01 6b.
        Golden(
            name: "request with empty map value",
            frame: .request(Frame.Request(metadata: ["k": ""])), bytes: "1a 05 2a 03 0a 01 6b"),
        // A present status is written even when it is OK with no message: 1a 00.
        Golden(
            name: "response with OK status",
            frame: .response(Frame.Response(requestID: "x", status: Frame.Status())), bytes: "22 05 0a 01 78 1a 00"),
        Golden(
            name: "response without status",
            frame: .response(Frame.Response(requestID: "x", payload: [0xff])), bytes: "22 06 0a 01 78 12 01 ff"),
        Golden(
            name: "response with error status",
            frame: .response(Frame.Response(status: Frame.Status(code: .unauthenticated, message: "no"))),
            bytes: "22 08 1a 06 08 10 12 02 6e 6f"),
        Golden(name: "cancel", frame: .cancel(Frame.Cancel(requestID: "9")), bytes: "2a 03 0a 01 39"),
        // seq 2^35 = 80 80 80 80 80 01; topic "é" = c3 a9.
        Golden(
            name: "push",
            frame: .push(Frame.Push(seq: 1 << 35, topic: "é", payload: [0])),
            bytes: "32 0e 08 80 80 80 80 80 01 12 02 c3 a9 1a 01 00"),
        // epoch 300 = field 4 (20), ac 02.
        Golden(
            name: "push with epoch",
            frame: .push(Frame.Push(seq: 5, topic: "a", payload: [0], epoch: 300)),
            bytes: "32 0b 08 05 12 01 61 1a 01 00 20 ac 02"),
        // Packed: one length-delimited field holding 01, ac 02, and UInt64.max (nine ff, then 01).
        Golden(
            name: "ack (packed)",
            frame: .ack(Frame.Ack(seqs: [1, 300, .max])),
            bytes: "3a 0f 0a 0d 01 ac 02 ff ff ff ff ff ff ff ff ff 01"),
        // epoch 7 = field 2 (10), 07, after the packed seqs.
        Golden(
            name: "ack with epoch",
            frame: .ack(Frame.Ack(seqs: [5, 6, 300], epoch: 7)),
            bytes: "3a 08 0a 04 05 06 ac 02 10 07"),
        Golden(name: "pong", frame: .pong(Frame.Pong(nonce: 5, loadPermille: 999)), bytes: "52 05 08 05 10 e7 07"),
        // code 8, reason "é", reconnect true (18 01), retry 1000 (e8 07); Frame.go_away = field 11 -> 0x5a.
        Golden(
            name: "goAway",
            frame: .goAway(
                Frame.GoAway(code: .resourceExhausted, reason: "é", reconnect: true, retryAfterMilliseconds: 1000)),
            bytes: "5a 0b 08 08 12 02 c3 a9 18 01 20 e8 07"),
        Golden(name: "empty ping", frame: .ping(Frame.Ping()), bytes: "4a 00"),
        Golden(name: "unrecognized", frame: .unrecognized, bytes: ""),
    ]

    @Test("Encoding matches the hand-computed bytes", arguments: goldens)
    func encodes(golden: Golden) {
        #expect(golden.frame.encodedBytes == hex(golden.bytes))
        #expect(golden.frame.encodedSize == hex(golden.bytes).count)
    }

    @Test("Decoding the hand-computed bytes gives the frame", arguments: goldens)
    func decodes(golden: Golden) throws {
        #expect(try Frame(decoding: hex(golden.bytes)) == golden.frame)
    }

    @Test("The delimited form is the length as a varint, then the frame")
    func delimited() {
        #expect(Frame.ping(Frame.Ping(nonce: 1)).delimitedBytes == hex("04 4a 02 08 01"))
        // 200 bytes of payload: Push = 1a c8 01 + 200 bytes = 203; Frame = 32 cb 01 + 203 = 206 = ce 01.
        let push = Frame.push(Frame.Push(payload: [UInt8](repeating: 7, count: 200)))
        let bytes = push.delimitedBytes
        #expect(Array(bytes.prefix(7)) == hex("ce 01 32 cb 01 1a c8"))
        #expect(bytes.count == 2 + 206)
    }
}

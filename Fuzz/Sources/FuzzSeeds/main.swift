// Writes the seed corpora from valid traffic: the frames of ordinary sessions, as each target
// reads them. Usage: FuzzSeeds DIRECTORY (Scripts/fuzz.sh --seeds writes Fuzz/Corpus).
import FuzzKit

// Testable (this debug build has testing on) for the zlib compressor the inflation seeds use.
@testable import LongLinkWire

#if canImport(Glibc)
    import Glibc
#endif

/// The frames of a short session, both ways: what a client sends and what a server answers.
let hello = Frame.hello(Frame.Hello(clientID: "c1", heartbeatMilliseconds: 10_000, metadata: ["app": "quotes"]))
let welcome = Frame.welcome(
    Frame.Welcome(
        serverID: "s1", heartbeatMilliseconds: 10_000, maxFrameBytes: 4_096, dedupeWindowMilliseconds: 60_000,
        maxInFlight: 4))
func request(_ id: Int, _ method: String = "async", bytes: Int = 3) -> Frame {
    .request(
        Frame.Request(
            requestID: String(id), method: method, payload: [UInt8](repeating: 0x7b, count: bytes),
            timeoutMilliseconds: 5_000))
}
func response(_ id: Int, status: StatusCode = .ok) -> Frame {
    .response(
        Frame.Response(
            requestID: String(id), payload: [1, 2], status: status == .ok ? nil : Frame.Status(code: status)))
}
func push(_ seq: UInt64, _ topic: String = "a", epoch: UInt64 = 7) -> Frame {
    .push(Frame.Push(seq: seq, topic: topic, payload: [9], epoch: epoch))
}
let goAway = Frame.goAway(
    Frame.GoAway(code: .unavailable, reason: "restart", reconnect: true, retryAfterMilliseconds: 100))

func delimited(_ frames: [Frame]) -> [UInt8] {
    var bytes: [UInt8] = []
    for frame in frames { frame.encodeDelimited(into: &bytes) }
    return bytes
}

var seeds: [String: [UInt8]] = [:]

// The decoder: whole streams, under the default limit, and split at a few points.
let clientStream = delimited([
    hello, request(1), .sync(Frame.Sync()), .ack(Frame.Ack(seqs: [1, 2, 3])), .ping(Frame.Ping(nonce: 5)),
    .cancel(Frame.Cancel(requestID: "1")), goAway,
])
let serverStream = delimited([
    welcome, response(1), push(1), push(2, "b"), push(0), .pong(Frame.Pong(nonce: 5, loadPermille: 10)), goAway,
])
for (name, stream) in [("client-stream", clientStream), ("server-stream", serverStream)] {
    for (suffix, splits) in [("whole", [UInt64]()), ("split", [1, 2, 3, 5, 8, 13])] {
        var script = FuzzScript()
        script.byte(5)
        script.bool(false)
        script.byte(UInt8(splits.count))
        for split in splits { script.varint(split) }
        script.chunk(stream)
        seeds["FrameDecoderFuzz/\(name)-\(suffix)"] = script.bytes
    }
}

// The client: a session with requests, pushes, a consumer, a GoAway and a reconnect.
do {
    var script = FuzzScript()
    func event(_ event: ClientEvent) { script.byte(event.rawValue) }
    func frame(_ frame: Frame) {
        event(.frame)
        script.frame(frame)
    }
    event(.connect)
    frame(welcome)
    event(.request)
    script.bool(true)
    script.bool(true)
    script.byte(2)
    event(.loginSucceeded)
    event(.addConsumer)
    script.byte(1)
    script.byte(2)
    for id in 2...4 {
        event(.request)
        script.bool(id % 2 == 0)
        script.bool(false)
        script.byte(UInt8(id * 10))
    }
    frame(response(1))
    frame(push(1))
    frame(push(2))
    frame(push(0, "b"))
    event(.take)
    script.byte(0)
    script.byte(2)
    event(.ackTimer)
    frame(response(3, status: .deadlineExceeded))
    frame(.ping(Frame.Ping(nonce: 1)))
    event(.tick)
    script.bool(false)
    script.bool(true)
    frame(goAway)
    frame(response(2))
    event(.linkClosed)
    event(.connect)
    frame(welcome)
    event(.loginSucceeded)
    frame(push(2))
    frame(push(3, epoch: 8))
    event(.removeConsumer)
    script.byte(0)
    event(.shutdown)
    seeds["ClientInboundFuzz/session"] = script.bytes
}

// The server: a connection that logs in, runs requests, receives pushes, then a resend after a
// reconnect that joins or replays the first execution.
do {
    var script = FuzzScript()
    func event(_ event: ServerEvent) { script.byte(event.rawValue) }
    func bytes(_ frames: [Frame]) {
        event(.bytes)
        script.chunk(delimited(frames))
    }
    bytes([hello, request(1, "inline"), request(2), request(3)])
    event(.bind)
    script.byte(0)
    bytes([.sync(Frame.Sync())])
    event(.pump)
    script.byte(5)
    bytes([.ack(Frame.Ack(seqs: [1, 2]))])
    event(.handlerFinished)
    script.byte(0)
    bytes([.cancel(Frame.Cancel(requestID: "3")), .ping(Frame.Ping(nonce: 2))])
    event(.heartbeatTick)
    let partial = delimited([request(4, bytes: 40)])
    event(.bytes)
    script.chunk(Array(partial.prefix(10)))
    event(.partialFrameTimer)
    script.bool(false)
    event(.connectionClosed)
    bytes([hello, request(2), request(1, "inline")])
    event(.advanceClock)
    script.varint(500)
    event(.handlerFinished)
    script.byte(0)
    event(.goAway)
    event(.drainTimeout)
    seeds["ServerInboundFuzz/session"] = script.bytes
}

// The RESP3 parser: replies of every type as Redis sends them (HELLO's map, an XRANGE page, a
// pub/sub push, errors), under the default and the tiny limits, whole and split.
do {
    let replies = Array(
        ("%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n+OK\r\n-NOSCRIPT No matching script\r\n"
            + ":42\r\n$-1\r\n_\r\n,3.5\r\n,-inf\r\n#t\r\n!9\r\nERR bad x\r\n=8\r\ntxt:text\r\n(12345678901234567890\r\n"
            + "*2\r\n*2\r\n$3\r\n1-0\r\n*4\r\n$1\r\nt\r\n$1\r\na\r\n$1\r\nd\r\n$2\r\nhi\r\n*-1\r\n"
            + "~2\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$5\r\n7:123\r\n").utf8)
    for (suffix, tiny, splits) in [("whole", false, [UInt64]()), ("split", false, [1, 2, 3, 5, 8, 13, 21]), ("tiny", true, [4, 4])] {
        var script = FuzzScript()
        script.bool(tiny)
        script.byte(UInt8(splits.count))
        for split in splits { script.varint(split) }
        script.chunk(replies)
        seeds["RESPParserFuzz/replies-\(suffix)"] = script.bytes
    }
}

// Inflation: quote lines deflated by the target, a zlib stream as it arrives (and cut short), and
// bombs of zeros past the ratio, the frame limit and a small budget.
do {
    let quotes = Array(String(repeating: "AAPL 189.50 190.10;", count: 40).utf8)
    let stream = PayloadCompressor.deflate(quotes, level: 6) ?? []
    func zeros(_ count: Int) -> [UInt8] {
        PayloadCompressor.deflate([UInt8](repeating: 0, count: count), level: 9) ?? []
    }
    let cases: [(String, frame: UInt64, budget: UInt64?, deflate: Bool, [UInt8])] = [
        ("quotes", 4_096, nil, true, quotes), ("stream", 4_096, nil, false, stream),
        ("truncated", 4_096, nil, false, Array(stream.prefix(stream.count / 2))),
        ("bomb-ratio", 1 << 20, nil, false, zeros(4 << 20)), ("bomb-frame", 1_000, nil, false, zeros(5_000)),
        ("bomb-budget", 1 << 20, 2_000, false, zeros(5_000)),
    ]
    for (name, frame, budget, deflate, payload) in cases {
        var script = FuzzScript()
        script.varint(frame - 64)
        script.byte(63)  // ratio 64
        script.bool(budget == nil)
        if let budget { script.varint(budget) }
        script.bool(deflate)
        script.chunk(payload)
        if deflate { script.byte(0) }  // level 1
        seeds["InflationFuzz/\(name)"] = script.bytes
    }
}

// The push store's replies: an XRANGE page of two pushes (one with an epoch), the produce script's
// `{epoch, seqs…}` with a refused push, an empty page, and a nil reply.
do {
    let replies = Array(
        ("*2\r\n*2\r\n$3\r\n1-0\r\n*6\r\n$1\r\nt\r\n$6\r\nalerts\r\n$1\r\nd\r\n$2\r\nhi\r\n$1\r\ne\r\n$3\r\n777\r\n"
            + "*2\r\n$3\r\n2-0\r\n*4\r\n$1\r\nt\r\n$1\r\nx\r\n$1\r\nd\r\n$0\r\n\r\n"
            + "*4\r\n:777\r\n:3\r\n:0\r\n:4\r\n*0\r\n_\r\n").utf8)
    for (suffix, produced) in [("page", UInt8(0)), ("produce", UInt8(3))] {
        var script = FuzzScript()
        script.byte(produced)
        script.chunk(replies)
        seeds["PushStoreRepliesFuzz/replies-\(suffix)"] = script.bytes
    }
}

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "Corpus"
for (name, bytes) in seeds.sorted(by: { $0.key < $1.key }) {
    let path = "\(directory)/\(name)"
    guard let file = fopen(path, "wb") else {
        print("FuzzSeeds: cannot write \(path)")
        exit(1)
    }
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
    print("FuzzSeeds: \(path) (\(bytes.count) bytes)")
}

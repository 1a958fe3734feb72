import Foundation
import LongLinkTestSupport
import LongLinkWire
import Testing

/// Whether the official protobuf runtime for Python is there to check the codec against.
enum InteropEnvironment {
    static let howToEnable = "needs python3 with the protobuf runtime: pip install protobuf grpcio-tools"

    static let isAvailable: Bool = {
        let result = try? Subprocess.runBlocking(
            ["python3", "-c", "import google.protobuf, grpc_tools.protoc"], timeout: .seconds(60))
        guard let result, result.status == 0, !result.timedOut else {
            print("LongLink interop tests skipped: \(howToEnable)")
            return false
        }
        return true
    }()

    /// The package root, found from this file's path (Tests/LongLinkWireTests/InteropTests.swift).
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// The codec against the official protobuf runtime (Python, upb): each side decodes what the
/// other encoded, and both describe the frames in the same JSON shape for comparison.
@Suite(
    "Interop with the official protobuf runtime",
    .sharedMachine,
    .enabled(if: InteropEnvironment.isAvailable, "\(InteropEnvironment.howToEnable)"))
struct InteropTests {
    /// A scratch directory holding the generated Python classes.
    private final class Workspace {
        let directory: URL
        let generated: URL

        init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "longlink-interop-\(UUID().uuidString)")
            generated = directory.appendingPathComponent("gen")
            try FileManager.default.createDirectory(at: generated, withIntermediateDirectories: true)
            let proto = InteropEnvironment.repositoryRoot.appendingPathComponent("proto")
            try await Self.check(
                [
                    "python3", "-m", "grpc_tools.protoc", "-I", proto.path, "--python_out=\(generated.path)",
                    proto.appendingPathComponent("longlink/v1/longlink.proto").path,
                ])
        }

        deinit {
            try? FileManager.default.removeItem(at: directory)
        }

        func file(_ name: String) -> URL {
            directory.appendingPathComponent(name)
        }

        /// Runs `interop.py` in `mode`.
        func interop(_ mode: String, stream: URL, json: URL) async throws {
            let script = InteropEnvironment.repositoryRoot.appendingPathComponent("Tests/Interop/interop.py")
            try await Self.check(["python3", script.path, mode, generated.path, stream.path, json.path])
        }

        private static func check(_ arguments: [String]) async throws {
            let result = try await Subprocess.run(arguments, timeout: .seconds(120))
            try #require(!result.timedOut, "timed out: \(arguments.joined(separator: " "))")
            try #require(
                result.status == 0,
                "\(arguments.joined(separator: " ")) exited with \(result.status):\n\(result.errorOutput)")
        }
    }

    @Test("Swift decodes what the protobuf runtime encoded")
    func pythonToSwift() async throws {
        let workspace = try await Workspace()
        let streamURL = workspace.file("python.bin")
        let jsonURL = workspace.file("python.json")
        try await workspace.interop("encode", stream: streamURL, json: jsonURL)
        let stream = [UInt8](try Data(contentsOf: streamURL))
        let expected = try JSONDecoder().decode([JSONValue].self, from: Data(contentsOf: jsonURL))

        // Through the decoder's batch path, in uneven chunks. The checks yield now and then (see `Pacer`).
        var pacer = Pacer()
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        var start = 0
        var chunk = 1
        while start < stream.count {
            await pacer.yieldIfDue()
            let end = Swift.min(stream.count, start + chunk)
            try decoder.decode(stream[start..<end], into: &frames)
            start = end
            chunk = chunk * 3 + 1
        }
        #expect(decoder.bufferedByteCount == 0)
        try #require(frames.count == expected.count)
        for (index, frame) in frames.enumerated() {
            await pacer.yieldIfDue()
            let mismatches = JSONValue(describing: frame).mismatchedFields(expected[index])
            #expect(mismatches.isEmpty, "frame \(index) (\(expected[index].kind)) differs in \(mismatches)")
        }
        // Every kind, and an empty frame, came across.
        #expect(Set(expected.map(\.kind)).count == 12)

        // Without maps (whose entry order and empty fields the runtimes choose freely), our
        // encoding is byte for byte the runtime's.
        var mapFree = 0
        for body in Self.split(stream) {
            await pacer.yieldIfDue()
            let frame = try Frame(decoding: body)
            switch frame {
            case .hello(let hello) where !hello.metadata.isEmpty: continue
            case .request(let request) where !request.metadata.isEmpty: continue
            default:
                #expect(frame.encodedBytes == body, "\(frame)")
                mapFree += 1
            }
        }
        #expect(mapFree >= 15)
    }

    @Test("The protobuf runtime decodes what Swift encoded")
    func swiftToPython() async throws {
        let workspace = try await Workspace()
        var generator = FrameGenerator(seed: 0x1_7E20_9000)
        // Making and checking the frames yields now and then (see `Pacer`).
        var pacer = Pacer()
        var frames: [Frame] = []
        for kind in 0..<FrameGenerator.kindCount {
            for _ in 0..<40 {
                frames.append(generator.frame(kind: kind))
                await pacer.yieldIfDue()
            }
        }
        frames += [
            .response(Frame.Response(requestID: "ok", status: Frame.Status())),
            .response(Frame.Response(requestID: "err", status: Frame.Status(code: .unauthenticated, message: "é"))),
            .ack(Frame.Ack(seqs: Array(0...5_000) + [.max])),
            .hello(Frame.Hello(clientID: "c", metadata: ["": "v", "k": "", "😀": "价格"])),
            .push(Frame.Push(seq: .max, topic: "t", payload: generator.bytes(count: 1 << 20))),
            .goAway(Frame.GoAway(code: StatusCode(rawValue: .max), reason: "r", reconnect: true)),
        ]
        var stream: [UInt8] = []
        for frame in frames {
            frame.encodeDelimited(into: &stream)
        }
        let streamURL = workspace.file("swift.bin")
        let jsonURL = workspace.file("swift.json")
        try Data(stream).write(to: streamURL)
        try await workspace.interop("decode", stream: streamURL, json: jsonURL)
        let described = try JSONDecoder().decode([JSONValue].self, from: Data(contentsOf: jsonURL))
        try #require(described.count == frames.count)
        for (index, frame) in frames.enumerated() {
            await pacer.yieldIfDue()
            let mismatches = JSONValue(describing: frame).mismatchedFields(described[index])
            #expect(mismatches.isEmpty, "frame \(index) (\(described[index].kind)) differs in \(mismatches)")
        }
    }

    /// Splits a delimited stream into frame bodies.
    private static func split(_ stream: [UInt8]) -> [[UInt8]] {
        var bodies: [[UInt8]] = []
        var index = 0
        while index < stream.count {
            var length = 0
            var shift = 0
            while true {
                let byte = stream[index]
                index += 1
                length |= Int(byte & 0x7F) << shift
                shift += 7
                if byte < 0x80 { break }
            }
            bodies.append(Array(stream[index..<index + length]))
            index += length
        }
        return bodies
    }
}

/// The JSON shape `interop.py` uses to describe a frame.
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Strings compare by their UTF-8 bytes: Swift's `==` would equate canonically equivalent ones.
    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let left), .bool(let right)): left == right
        case (.string(let left), .string(let right)): left.utf8.elementsEqual(right.utf8)
        case (.array(let left), .array(let right)):
            left.count == right.count && zip(left, right).allSatisfy { $0 == $1 }
        case (.object(let left), .object(let right)):
            left.count == right.count && left.allSatisfy { key, value in right[key].map { $0 == value } ?? false }
        default: false
        }
    }

    /// The top-level fields whose values differ (short failure messages instead of megabytes of hex).
    func mismatchedFields(_ other: JSONValue) -> [String] {
        guard case .object(let mine) = self, case .object(let theirs) = other else {
            return self == other ? [] : ["<value>"]
        }
        return Set(mine.keys).union(theirs.keys).sorted().filter { key in
            guard let left = mine[key], let right = theirs[key] else { return true }
            return left != right
        }
    }

    /// The frame kind, for failure messages.
    var kind: String {
        if case .object(let fields) = self, case .string(let kind)? = fields["kind"] {
            return kind
        }
        return "?"
    }

    /// Describes a frame the way `interop.py` does.
    init(describing frame: Frame) {
        func number(_ value: some BinaryInteger) -> JSONValue { .string(String(value)) }
        func hex(_ bytes: [UInt8]) -> JSONValue {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = []
            text.reserveCapacity(bytes.count * 2)
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
            return .string(String(decoding: text, as: UTF8.self))
        }
        func map(_ map: [String: String]) -> JSONValue { .object(map.mapValues { .string($0) }) }

        var fields: [String: JSONValue]
        switch frame {
        case .hello(let hello):
            fields = [
                "kind": .string("hello"), "version": number(hello.version), "client_id": .string(hello.clientID),
                "heartbeat_ms": number(hello.heartbeatMilliseconds), "metadata": map(hello.metadata),
            ]
        case .welcome(let welcome):
            fields = [
                "kind": .string("welcome"), "version": number(welcome.version), "server_id": .string(welcome.serverID),
                "heartbeat_ms": number(welcome.heartbeatMilliseconds), "max_frame_bytes": number(welcome.maxFrameBytes),
                "load_permille": number(welcome.loadPermille),
                "dedupe_window_ms": number(welcome.dedupeWindowMilliseconds),
            ]
        case .request(let request):
            fields = [
                "kind": .string("request"), "request_id": .string(request.requestID), "method": .string(request.method),
                "payload": hex(request.payload), "timeout_ms": number(request.timeoutMilliseconds),
                "metadata": map(request.metadata),
            ]
        case .response(let response):
            fields = [
                "kind": .string("response"), "request_id": .string(response.requestID),
                "payload": hex(response.payload),
                "status": response.status.map {
                    .object(["code": number($0.code.rawValue), "message": .string($0.message)])
                } ?? .null,
            ]
        case .cancel(let cancel):
            fields = ["kind": .string("cancel"), "request_id": .string(cancel.requestID)]
        case .push(let push):
            fields = [
                "kind": .string("push"), "seq": number(push.seq), "topic": .string(push.topic),
                "payload": hex(push.payload),
            ]
        case .ack(let ack):
            fields = ["kind": .string("ack"), "seqs": .array(ack.seqs.map(number)), "epoch": number(ack.epoch)]
        case .sync:
            fields = ["kind": .string("sync")]
        case .ping(let ping):
            fields = ["kind": .string("ping"), "nonce": number(ping.nonce)]
        case .pong(let pong):
            fields = ["kind": .string("pong"), "nonce": number(pong.nonce), "load_permille": number(pong.loadPermille)]
        case .goAway(let goAway):
            fields = [
                "kind": .string("go_away"), "code": number(goAway.code.rawValue), "reason": .string(goAway.reason),
                "reconnect": .bool(goAway.reconnect), "retry_after_ms": number(goAway.retryAfterMilliseconds),
            ]
        case .unrecognized:
            fields = ["kind": .string("unrecognized")]
        }
        self = .object(fields)
    }
}

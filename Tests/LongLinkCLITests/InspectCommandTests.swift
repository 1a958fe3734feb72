import Foundation
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import longlink

@Suite("longlink inspect", .sharedMachine)
struct InspectCommandTests {
    /// One frame of every kind, with non-default fields.
    static let frames: [Frame] = [
        .hello(Frame.Hello(clientID: "c-1", heartbeatMilliseconds: 5_000, metadata: ["app": "1.0"])),
        .welcome(
            Frame.Welcome(
                serverID: "s", heartbeatMilliseconds: 5_000, maxFrameBytes: 4_194_304, loadPermille: 12,
                dedupeWindowMilliseconds: 120_000)),
        .request(Frame.Request(requestID: "1", method: "echo", payload: Array("hi".utf8), timeoutMilliseconds: 250)),
        .response(Frame.Response(requestID: "1", payload: Array("hi".utf8))),
        .response(Frame.Response(requestID: "2", status: Frame.Status(code: .notFound, message: "nope"))),
        .cancel(Frame.Cancel(requestID: "3")),
        .push(Frame.Push(seq: 7, topic: "alerts", payload: [0x00, 0xFF])),
        .ack(Frame.Ack(seqs: [5, 6, 7])),
        .sync(Frame.Sync()),
        .ping(Frame.Ping(nonce: 99)),
        .pong(Frame.Pong(nonce: 99, loadPermille: 3)),
        .goAway(Frame.GoAway(code: .unavailable, reason: "bye", reconnect: true, retryAfterMilliseconds: 200)),
        .unrecognized,
    ]

    static func encoded(_ frames: [Frame]) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { frame.encodeDelimited(into: &bytes) }
        return bytes
    }

    static func temporaryFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("longlink-inspect-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        return url
    }

    static func objects(_ outcome: ToolProcess.Outcome) throws -> [[String: Any]] {
        try outcome.lines.map { line in
            try #require(
                JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not an object: \(line)")
        }
    }

    @Test func everyKindAndField() async throws {
        let bytes = Self.encoded(Self.frames)
        let file = try Self.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try await ToolProcess.run(["inspect", file.path])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let objects = try Self.objects(outcome)
        try #require(objects.count == Self.frames.count)
        // Extras sit beside the frame, never inside it.
        for object in objects { #expect(Set(object.keys) == ["offset", "size", "frame", "notes"]) }
        #expect(
            objects.map { ($0["notes"] as? [String: Any])?["kind"] as? String }
                == [
                    "hello", "welcome", "request", "response", "response", "cancel", "push", "ack", "sync", "ping",
                    "pong", "go_away", "unrecognized",
                ])
        // Offsets are where each length prefix starts; sizes count the prefix too.
        var offset = 0
        for (frame, object) in zip(Self.frames, objects) {
            let size = Self.encoded([frame]).count
            #expect(object["offset"] as? Int == offset)
            #expect(object["size"] as? Int == size)
            offset += size
        }
        func body(_ index: Int, _ name: String) -> [String: Any]? {
            (objects[index]["frame"] as? [String: Any])?[name] as? [String: Any]
        }
        #expect(body(0, "hello")?["version"] as? Int == 1)
        #expect(body(0, "hello")?["clientId"] as? String == "c-1")
        #expect(body(0, "hello")?["metadata"] as? [String: String] == ["app": "1.0"])
        #expect(body(1, "welcome")?["dedupeWindowMs"] as? Int == 120_000)
        #expect(body(1, "welcome")?["loadPermille"] as? Int == 12)
        #expect(body(2, "request")?["method"] as? String == "echo")
        #expect(body(2, "request")?["payload"] as? String == "aGk=")
        #expect(body(2, "request")?["timeoutMs"] as? Int == 250)
        #expect(body(2, "request")?["metadata"] == nil, "an empty map is left out")
        #expect((objects[2]["notes"] as? [String: Any])?["payloadText"] as? String == "hi")
        #expect(body(3, "response")?["status"] == nil, "an absent status stays absent")
        let status = try #require(body(4, "response")?["status"] as? [String: Any])
        #expect(status["code"] as? Int == 5)
        #expect(status["message"] as? String == "nope")
        #expect((objects[4]["notes"] as? [String: Any])?["statusName"] as? String == "NOT_FOUND")
        #expect(body(5, "cancel")?["requestId"] as? String == "3")
        #expect(body(6, "push")?["seq"] as? String == "7", "uint64 is a string in proto3 JSON")
        #expect(body(6, "push")?["payload"] as? String == "AP8=")
        #expect((objects[6]["notes"] as? [String: Any])?["payloadText"] == nil)
        #expect(body(7, "ack")?["seqs"] as? [String] == ["5", "6", "7"])
        #expect(body(8, "sync")?.isEmpty == true, "an empty body is still there")
        #expect(body(9, "ping")?["nonce"] as? String == "99")
        #expect(body(10, "pong")?["loadPermille"] as? Int == 3)
        #expect(body(11, "goAway")?["code"] as? Int == 14)
        #expect(body(11, "goAway")?["reason"] as? String == "bye")
        #expect(body(11, "goAway")?["reconnect"] as? Bool == true)
        #expect(body(11, "goAway")?["retryAfterMs"] as? Int == 200)
        #expect((objects[11]["notes"] as? [String: Any])?["codeName"] as? String == "UNAVAILABLE")
        #expect((objects[12]["frame"] as? [String: Any])?.isEmpty == true)
        // The key order is fixed: offset, size, frame, notes.
        #expect(
            outcome.lines[2]
                == #"{"offset":\#(objects[2]["offset"] as? Int ?? -1),"size":\#(Self.encoded([Self.frames[2]]).count),"#
                + #""frame":{"request":{"requestId":"1","method":"echo","payload":"aGk=","timeoutMs":250}},"#
                + #""notes":{"kind":"request","payloadText":"hi"}}"#)
    }

    @Test func lineKeyOrderAndFields() {
        let request = Frame.request(
            Frame.Request(requestID: "1", method: "echo", payload: Array("hi".utf8), metadata: ["b": "2", "a": "1"]))
        #expect(
            FrameJSON.line(for: request, offset: 0, size: 30)
                == #"{"offset":0,"size":30,"frame":{"request":{"requestId":"1","method":"echo","payload":"aGk=","#
                + #""metadata":{"a":"1","b":"2"}}},"notes":{"kind":"request","payloadText":"hi"}}"#)
        let response = Frame.response(Frame.Response(requestID: "9", payload: [0xFF], status: nil))
        #expect(
            FrameJSON.line(for: response, offset: 12, size: 7)
                == #"{"offset":12,"size":7,"frame":{"response":{"requestId":"9","payload":"/w=="}},"#
                + #""notes":{"kind":"response"}}"#)
        let failed = Frame.response(
            Frame.Response(requestID: "9", status: Frame.Status(code: .notFound, message: "no\n")))
        #expect(
            FrameJSON.line(for: failed, offset: 1, size: 12)
                == #"{"offset":1,"size":12,"frame":{"response":{"requestId":"9","status":{"code":5,"message":"no\n"}}},"#
                + #""notes":{"kind":"response","statusName":"NOT_FOUND"}}"#)
        #expect(
            FrameJSON.line(for: .ack(Frame.Ack(seqs: [1, UInt64.max])), offset: 3, size: 14)
                == #"{"offset":3,"size":14,"frame":{"ack":{"seqs":["1","18446744073709551615"]}},"#
                + #""notes":{"kind":"ack"}}"#)
        #expect(
            FrameJSON.line(for: .unrecognized, offset: 0, size: 1)
                == #"{"offset":0,"size":1,"frame":{},"notes":{"kind":"unrecognized"}}"#)
    }

    /// Defaults are left out, as the proto3 JSON mapping does, but present messages stay.
    @Test func defaultsAreLeftOut() {
        #expect(FrameJSON.message(.hello(Frame.Hello(version: 0))) == #"{"hello":{}}"#)
        #expect(FrameJSON.message(.push(Frame.Push())) == #"{"push":{}}"#)
        #expect(FrameJSON.message(.ack(Frame.Ack())) == #"{"ack":{}}"#)
        #expect(FrameJSON.message(.goAway(Frame.GoAway())) == #"{"goAway":{}}"#)
        #expect(
            FrameJSON.message(.response(Frame.Response(requestID: "9", status: Frame.Status())))
                == #"{"response":{"requestId":"9","status":{}}}"#)
        #expect(FrameJSON.message(.unrecognized) == "{}")
        #expect(FrameJSON.message(.ping(Frame.Ping(nonce: .max))) == #"{"ping":{"nonce":"18446744073709551615"}}"#)
        // U+2028 is escaped: it would end the line for line-oriented readers.
        #expect(
            FrameJSON.message(.cancel(Frame.Cancel(requestID: "a\u{2028}b"))) == #"{"cancel":{"requestId":"a\u2028b"}}"#
        )
    }

    @Test func readsStandardInput() async throws {
        let bytes = Self.encoded(Array(Self.frames.prefix(3)))
        for arguments in [["inspect"], ["inspect", "-"]] {
            let outcome = try await ToolProcess.run(arguments, input: bytes)
            #expect(outcome.status == 0)
            #expect(outcome.lines.count == 3)
        }
    }

    @Test func emptyInputIsNoFrames() async throws {
        let outcome = try await ToolProcess.run(["inspect"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.isEmpty)
    }

    @Test func garbageAfterGoodFrames() async throws {
        let good = Self.encoded(Array(Self.frames.prefix(2)))
        // A 2-byte frame whose first tag has wire type 7, which protobuf does not define.
        let bytes = good + [0x02, 0x0F, 0x00]
        let file = try Self.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try await ToolProcess.run(["inspect", file.path])
        #expect(outcome.status == 1)
        #expect(outcome.lines.count == 2)
        #expect(outcome.standardError.contains("malformed frame at offset \(good.count)"))
        #expect(outcome.standardError.contains("invalidWireType"))
    }

    @Test func pureGarbage() async throws {
        let outcome = try await ToolProcess.run(["inspect"], input: Array(repeating: 0xFF, count: 32))
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.contains("offset 0"))
    }

    @Test func oversizedFrame() async throws {
        let bytes = Self.encoded([Self.frames[2]])
        let outcome = try await ToolProcess.run(["inspect", "--max-frame-bytes", "4"], input: bytes)
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("frameTooLarge"))
    }

    @Test func truncatedFinalFrame() async throws {
        let good = Self.encoded([Self.frames[2]])
        let next = Self.encoded([Self.frames[3]])
        let outcome = try await ToolProcess.run(["inspect"], input: good + next.dropLast(2))
        #expect(outcome.status == 1)
        #expect(outcome.lines.count == 1)
        #expect(outcome.standardError.contains("truncated frame at offset \(good.count)"))
    }

    @Test func missingFile() async throws {
        let outcome = try await ToolProcess.run(["inspect", "/nonexistent/frames.bin"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("cannot open /nonexistent/frames.bin"))
    }
}

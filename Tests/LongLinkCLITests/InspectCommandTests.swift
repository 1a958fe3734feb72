import Foundation
import LongLinkWire
import Testing

@Suite("longlink inspect")
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
        #expect(
            objects.map { $0["kind"] as? String }
                == [
                    "hello", "welcome", "request", "response", "response", "cancel", "push", "ack", "sync", "ping",
                    "pong",
                    "go_away", "unrecognized",
                ])
        // Offsets are where each length prefix starts.
        var offset = 0
        for (frame, object) in zip(Self.frames, objects) {
            #expect(object["offset"] as? Int == offset)
            offset += Self.encoded([frame]).count
        }
        #expect(objects[0]["client_id"] as? String == "c-1")
        #expect(objects[0]["metadata"] as? [String: String] == ["app": "1.0"])
        #expect(objects[1]["dedupe_window_ms"] as? Int == 120_000)
        #expect(objects[1]["load_permille"] as? Int == 12)
        #expect(objects[2]["method"] as? String == "echo")
        #expect(objects[2]["payload_base64"] as? String == "aGk=")
        #expect(objects[2]["payload_text"] as? String == "hi")
        #expect(objects[2]["timeout_ms"] as? Int == 250)
        #expect(objects[3]["status"] is NSNull)
        let status = try #require(objects[4]["status"] as? [String: Any])
        #expect(status["code"] as? Int == 5)
        #expect(status["name"] as? String == "NOT_FOUND")
        #expect(status["message"] as? String == "nope")
        #expect(objects[5]["request_id"] as? String == "3")
        #expect(objects[6]["seq"] as? Int == 7)
        #expect(objects[6]["payload_base64"] as? String == "AP8=")
        #expect(objects[6]["payload_text"] == nil)
        #expect(objects[7]["seqs"] as? [Int] == [5, 6, 7])
        #expect(objects[10]["load_permille"] as? Int == 3)
        #expect(objects[11]["code"] as? Int == 14)
        #expect(objects[11]["reason"] as? String == "bye")
        #expect(objects[11]["reconnect"] as? Bool == true)
        #expect(objects[11]["retry_after_ms"] as? Int == 200)
        // The key order is fixed: offset, kind, then the fields in schema order.
        #expect(outcome.lines[2].hasPrefix(#"{"offset":"#))
        #expect(outcome.lines[2].contains(#""kind":"request","request_id":"1","method":"echo","payload_base64""#))
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

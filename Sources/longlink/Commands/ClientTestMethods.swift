import Foundation
import LongLinkCLISupport
import LongLinkServer
import Synchronization

/// The methods `longlink serve` offers to a client developer testing their own client: `count`
/// shows whether a resend ran twice, `emit` sends pushes on demand.
///
/// `count` (executions are counted per client id and request id, the key the server
/// de-duplicates by):
/// - payload empty or `{}`: this call is one run of its own request id; replies
///   `{"request_id":ID,"runs":N}`, N the runs of (caller's client id, ID) so far, this one
///   included. The first run says 1. A resend that the server de-duplicated gets the stored
///   reply, so it still says 1; a resend that ran again says 2 (with `--dedupe-window 0`, or
///   after the window).
/// - payload `{"request_id":ID}` (and optionally `"client_id":C`, default the caller's): a query,
///   not a run: replies `{"request_id":ID,"runs":N}`, 0 for a request id that never ran. For a
///   test whose reply to ID was lost, or that checks from another connection.
/// - Other keys are `INVALID_ARGUMENT` (a misspelt key must not silently count as a run). The
///   newest ``maxCountedRequests`` pairs are remembered; older ones read as 0.
///
/// `emit` (the connection must be logged in: pushes go to a principal):
/// - payload `{"topic":T,"n":N,"reliable":B,"interval_ms":MS}`; `topic` is required (1 to 256
///   bytes); `n` 1 to ``maxEmitted`` (default 1); `reliable` default false; `interval_ms` 0 to
///   60000 (default 0), and (n - 1) × interval_ms at most 600000.
/// - Sends N pushes to the caller's principal (every connection of it) on topic T, the first at
///   once and then one every MS milliseconds. Push i (from 1) has the payload `{"index":i,"n":N}`.
///   Reliable pushes are stored until acknowledged and flow after the client's `Sync`; best-effort
///   ones (seq 0) go to the principal's open connections and may be dropped.
/// - Replies when all N are queued, not before: `{"topic":T,"emitted":N,"reliable":B}` plus
///   `"first_seq"` and `"last_seq"` for reliable pushes. The pushes may reach the client before or
///   after the reply. The request's timeout must cover (n - 1) × interval_ms: when the request
///   is cancelled or times out, the pushes not yet sent are not sent. A full push store stops the
///   emission with `RESOURCE_EXHAUSTED`; a fleet's shared store out of reach (`serve --redis`)
///   with `UNAVAILABLE`.
final class ClientTestMethods: Sendable {
    /// How many (client id, request id) pairs `count` remembers.
    static let maxCountedRequests = 100_000
    /// The most pushes one `emit` sends.
    static let maxEmitted = 10_000

    /// Who ran which request id, for `count`.
    private struct Key: Hashable {
        var clientID: String
        var requestID: String
    }

    private struct State {
        var runs: [Key: Int] = [:]
        /// Keys in the order they first ran, to forget the oldest.
        var order: [Key] = []
        var orderHead = 0
        weak var server: LongLinkServer?
    }

    private let state = Mutex(State())
    /// `--runs-log`: a file each run of `count` is appended to, as `CLIENT_ID REQUEST_ID`, before
    /// its reply; -1 for none. A line written is the kernel's once `write` returns, so it outlives
    /// a `kill -9` of the server: `soak --data-dir` counts runs across restarts from it.
    private let runsLog: Int32

    /// The methods; with `runsLog`, each run of `count` is also appended to that file. Throws a
    /// message naming the file when it cannot be opened.
    init(runsLog path: String? = nil) throws(UsageError) {
        guard let path else {
            runsLog = -1
            return
        }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw UsageError("--runs-log \(path): \(String(cString: strerror(errno)))")
        }
        runsLog = descriptor
    }

    deinit {
        if runsLog >= 0 { close(runsLog) }
    }

    /// Connects the methods to the server they run in, for the pushes `emit` sends.
    func attach(to server: LongLinkServer) {
        state.withLock { $0.server = server }
    }

    /// Adds `count` and `emit` to `router`.
    func register(in router: inout Router) {
        router.register("count", synchronous: { [self] in try count($0, $1) })
        router.register("emit") { [self] payload, context in
            try await emit(try Self.decode(EmitRequest.self, payload, usage: EmitRequest.usage), context)
        }
    }

    // MARK: count

    /// The payload of `count`: nothing (a run) or the request id to ask about (a query).
    struct CountRequest: Decodable, Equatable {
        var requestID: String?
        var clientID: String?

        init(requestID: String? = nil, clientID: String? = nil) {
            self.requestID = requestID
            self.clientID = clientID
        }

        init(from decoder: any Decoder) throws {
            let container = try StrictKeys.container(decoder, allowed: ["request_id", "client_id"])
            requestID = try container.decodeIfPresent(String.self, forKey: StrictKeys("request_id"))
            clientID = try container.decodeIfPresent(String.self, forKey: StrictKeys("client_id"))
            if clientID != nil, requestID == nil {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: [], debugDescription: "client_id needs a request_id to ask about"))
            }
        }
    }

    private func count(_ payload: [UInt8], _ context: RequestContext) throws -> [UInt8] {
        let request = try Self.decode(
            CountRequest.self, payload, usage: #"count expects {} or {"request_id":"ID"} (and optionally "client_id")"#)
        let runs: Int
        let requestID: String
        if let asked = request.requestID {
            requestID = asked
            let key = Key(clientID: request.clientID ?? context.clientID, requestID: asked)
            runs = state.withLock { $0.runs[key] ?? 0 }
        } else {
            requestID = context.requestID
            runs = recordRun(Key(clientID: context.clientID, requestID: requestID))
            if runsLog >= 0 {
                let line = Array("\(context.clientID) \(requestID)\n".utf8)
                // One write with O_APPEND: lines of concurrent runs never interleave.
                let written = line.withUnsafeBytes { write(runsLog, $0.baseAddress, $0.count) }
                guard written == line.count else {
                    throw LongLinkError(code: .unavailable, message: "count: the runs log could not be written")
                }
            }
        }
        return Array(#"{"request_id":\#(JSONObject.quoted(requestID)),"runs":\#(runs)}"#.utf8)
    }

    /// Counts one run of `key`; returns its runs so far.
    private func recordRun(_ key: Key) -> Int {
        state.withLock { state in
            if let runs = state.runs[key] {
                state.runs[key] = runs + 1
                return runs + 1
            }
            state.runs[key] = 1
            state.order.append(key)
            if state.order.count - state.orderHead > Self.maxCountedRequests {
                state.runs[state.order[state.orderHead]] = nil
                state.orderHead += 1
                // Drop the forgotten prefix now and then, not on every run.
                if state.orderHead >= Self.maxCountedRequests {
                    state.order.removeFirst(state.orderHead)
                    state.orderHead = 0
                }
            }
            return 1
        }
    }

    // MARK: emit

    /// The payload of `emit`, checked.
    struct EmitRequest: Decodable, Equatable {
        static let usage =
            #"emit expects {"topic":"T","n":1,"reliable":false,"interval_ms":0}: a topic of 1 to 256 bytes, "#
            + "n from 1 to \(ClientTestMethods.maxEmitted), interval_ms from 0 to 60000"
            + " and (n - 1) × interval_ms at most 600000"

        var topic: String
        var n: Int
        var reliable: Bool
        var intervalMilliseconds: Int

        init(from decoder: any Decoder) throws {
            let container = try StrictKeys.container(decoder, allowed: ["topic", "n", "reliable", "interval_ms"])
            topic = try container.decode(String.self, forKey: StrictKeys("topic"))
            n = try container.decodeIfPresent(Int.self, forKey: StrictKeys("n")) ?? 1
            reliable = try container.decodeIfPresent(Bool.self, forKey: StrictKeys("reliable")) ?? false
            intervalMilliseconds = try container.decodeIfPresent(Int.self, forKey: StrictKeys("interval_ms")) ?? 0
            guard (1...256).contains(topic.utf8.count), (1...ClientTestMethods.maxEmitted).contains(n),
                (0...60_000).contains(intervalMilliseconds), (n - 1) * intervalMilliseconds <= 600_000
            else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a value is out of range"))
            }
        }
    }

    private func emit(_ request: EmitRequest, _ context: RequestContext) async throws -> [UInt8] {
        guard let principal = context.principal else {
            throw LongLinkError(code: .unauthenticated, message: "log in before emit: pushes go to a principal")
        }
        guard let server = state.withLock({ $0.server }) else {
            throw LongLinkError(code: .unavailable, message: "the methods are not attached to a server")
        }
        var firstSeq: UInt64?
        var lastSeq: UInt64?
        for index in 1...request.n {
            if index > 1, request.intervalMilliseconds > 0 {
                // Cancellation (a Cancel, the deadline, shutdown) ends the sleep and the emission.
                try await Task.sleep(for: .milliseconds(request.intervalMilliseconds))
            }
            try Task.checkCancellation()
            let payload = Array(#"{"index":\#(index),"n":\#(request.n)}"#.utf8)
            if request.reliable {
                let seq: UInt64
                do {
                    seq = try await server.push(to: principal, topic: request.topic, payload: payload)
                } catch  where error.code == .unavailable {
                    // A fleet's store out of reach is not a full store: say so, with its code.
                    throw LongLinkError(
                        code: .unavailable,
                        message: "emit stopped after \(index - 1) of \(request.n) pushes: \(error.message)")
                } catch {
                    throw LongLinkError(
                        code: .resourceExhausted,
                        message: "emit stopped after \(index - 1) of \(request.n) pushes: \(error.message)")
                }
                firstSeq = firstSeq ?? seq
                lastSeq = seq
            } else {
                server.pushBestEffort(to: principal, topic: request.topic, payload: payload)
            }
        }
        var reply = JSONObject()
        reply.add("topic", request.topic)
        reply.add("emitted", request.n)
        reply.add("reliable", request.reliable)
        if let firstSeq, let lastSeq {
            reply.add("first_seq", firstSeq)
            reply.add("last_seq", lastSeq)
        }
        return Array(reply.text().utf8)
    }

    // MARK: Payloads

    /// Decodes a JSON payload (an empty one as `{}`); any failure is `INVALID_ARGUMENT` with `usage`
    /// and what was wrong.
    static func decode<T: Decodable>(_ type: T.Type, _ payload: [UInt8], usage: String) throws(LongLinkError) -> T {
        let blank = payload.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        do {
            return try JSONDecoder().decode(T.self, from: blank ? Data("{}".utf8) : Data(payload))
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty {
            throw LongLinkError(code: .invalidArgument, message: "\(usage) (\(context.debugDescription))")
        } catch {
            throw LongLinkError(code: .invalidArgument, message: usage)
        }
    }
}

/// Any JSON key, so that a payload's keys can be checked against the ones a method knows: a
/// misspelt key must fail, not be ignored.
struct StrictKeys: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) {
        stringValue = name
    }

    init?(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        nil
    }

    /// The decoder's object, after checking that it has no key outside `allowed`.
    static func container(_ decoder: any Decoder, allowed: Set<String>) throws -> KeyedDecodingContainer<StrictKeys> {
        let container = try decoder.container(keyedBy: StrictKeys.self)
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { !allowed.contains($0) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown key \"\(unknown)\""))
        }
        return container
    }
}

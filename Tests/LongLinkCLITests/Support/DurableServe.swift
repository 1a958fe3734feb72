import Foundation
import LongLink
import LongLinkTestSupport
import LongLinkTransport

/// What the durable store's fault tests share: a logged-in client of `longlink serve --data-dir`
/// that reconnects at once, and a ledger of what it produced, consumed and had answered.
enum DurableServe {
    /// A client of the server on `port`, logged in as `user` (only a logged-in session's requests
    /// are de-duplicated), retrying every 10–50 ms while the server is down.
    static func client(port: Int, user: String = "alice", clientID: String = "durable-faults") -> LongLinkClient {
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: port)])
        configuration.clientID = clientID
        configuration.backoff = Backoff(
            initial: .milliseconds(10), maximum: .milliseconds(50), resetAfter: .seconds(1), jitter: false)
        configuration.connectTimeout = .seconds(2)
        configuration.heartbeat = .seconds(2)
        configuration.login = { session in _ = try await session.request("login", payload: Array(user.utf8)) }
        return LongLinkClient(configuration: configuration)
    }

    /// The JSON object `bytes` holds.
    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw ToolProcess.Failure(description: "not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
        }
        return object
    }

    /// Emits one reliable push on `topic` to the caller's principal; its seq once the server
    /// replied (the push is stored), or the error.
    static func emit(_ client: LongLinkClient, topic: String, timeout: Duration = .seconds(5)) async throws -> UInt64 {
        var options = RequestOptions()
        options.timeout = timeout
        let reply = try object(
            try await client.request(
                "emit", payload: Array(#"{"topic":"\#(topic)","n":1,"reliable":true}"#.utf8), options: options))
        guard let seq = reply["first_seq"] as? Int else {
            throw ToolProcess.Failure(description: "emit replied without first_seq: \(reply)")
        }
        return UInt64(seq)
    }

    /// How many times the servers ran each `count` request of `clientID`, from the file their
    /// `--runs-log` appended to (`CLIENT_ID REQUEST_ID` a line), across every process.
    static func runs(inLog path: String, clientID: String) throws -> [String: Int] {
        var runs: [String: Int] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 2, fields[0] == clientID else { continue }
            runs[String(fields[1]), default: 0] += 1
        }
        return runs
    }

    /// What a run produced and saw, written by its producer and consumer tasks.
    struct Ledger: Sendable {
        /// Topics of the pushes whose `emit` replied.
        var produced: Set<String> = []
        /// How many times each topic was delivered to the application.
        var delivered: [String: Int] = [:]
        /// The highest seq delivered, per epoch as the client saw them (in delivery order).
        var seqs: [UInt64] = []
        /// Request ids of `count` runs whose reply arrived.
        var answered: [String] = []
        /// Producer calls that failed (their pushes may or may not be stored).
        var failedCalls = 0
    }
}

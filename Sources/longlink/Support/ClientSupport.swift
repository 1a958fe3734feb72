import Foundation
import LongLink
import LongLinkCLISupport
import Synchronization

/// What `longlink request` and `longlink subscribe` share: the options that configure the client,
/// and how errors, payloads and pushes are shown.
enum ClientSupport {
    static let endpointOption = OptionSpec.value(
        "endpoint", "HOST:PORT",
        help: "A server: 127.0.0.1:7000, [::1]:7000 or unix:/path (required; repeat it to balance across several).")
    static let loginOption = OptionSpec.value(
        "login", "METHOD=TEXT",
        help: "Log in after every connect: call METHOD with payload TEXT (login=alice).")
    static let clientIDOption = OptionSpec.value(
        "client-id", "ID", help: "The client id sent in Hello (default: random).")
    static let verboseOption = OptionSpec.flag("verbose", help: "Write the client's log to standard error.")
    /// The client's TLS options, for every command that connects (`request`, `subscribe`, `probe`):
    /// add them to the command's options and call ``tlsConfiguration(_:)``.
    static let tlsOptions: [OptionSpec] = [
        .flag("tls", help: "Connect with TLS, verifying the server's certificate and host name."),
        .value("tls-ca", "FILE", help: "With --tls: trust the CA certificates in FILE (PEM), not the system's."),
        .value(
            "tls-pin", "BASE64",
            help: "With --tls: accept only keys with this SHA-256 SPKI pin (base64; repeatable, for rotation)."),
        .value("tls-server-name", "NAME", help: "With --tls: the name to verify and send as SNI (default: the host)."),
        .flag(
            "tls-insecure-for-testing",
            help: "With --tls: do not verify the server's certificate or name. Anyone can intercept. Tests only."),
    ]

    /// The TLS configuration of ``tlsOptions``; nil without `--tls`.
    static func tlsConfiguration(_ arguments: ParsedArguments) throws(UsageError) -> TLSConfiguration? {
        let dependent = ["tls-ca", "tls-pin", "tls-server-name"].filter { arguments.value($0) != nil }
        guard arguments.flag("tls") else {
            if let first = dependent.first { throw UsageError("--\(first) needs --tls") }
            if arguments.flag("tls-insecure-for-testing") { throw UsageError("--tls-insecure-for-testing needs --tls") }
            return nil
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let path = arguments.value("tls-ca") { tls.trustRoots = .pemFile(path) }
        for text in arguments.allValues("tls-pin") {
            guard let pin = TLSPublicKeyPin(base64: text) else {
                throw UsageError("--tls-pin needs a base64 SHA-256 digest (44 characters), not '\(text)'")
            }
            tls.pinnedPublicKeys.append(pin)
        }
        if let name = arguments.value("tls-server-name") { tls.serverHostname = name }
        if arguments.flag("tls-insecure-for-testing") {
            tls.certificateVerification = .insecureNoVerificationForTesting
        }
        return tls
    }

    /// The client configuration for `--endpoint`, `--login`, `--client-id` and `--verbose`.
    static func configuration(_ arguments: ParsedArguments, command: String) throws(UsageError) -> ClientConfiguration {
        let texts = arguments.allValues("endpoint")
        guard !texts.isEmpty else {
            throw UsageError("missing --endpoint (for example --endpoint 127.0.0.1:7000)")
        }
        var configuration = ClientConfiguration(endpoints: try endpoints(texts, option: "--endpoint"))
        if let clientID = arguments.value("client-id") {
            guard (1...128).contains(clientID.utf8.count) else {
                throw UsageError("--client-id needs 1 to 128 bytes")
            }
            configuration.clientID = clientID
        }
        if let login = arguments.value("login") {
            let call = try self.call(login, option: "login")
            configuration.login = { session in
                _ = try await session.request(call.method, payload: call.payload)
            }
        }
        configuration.tls = try tlsConfiguration(arguments)
        if arguments.flag("verbose") {
            configuration.logger = { record in
                Terminal.standardError.line("longlink \(command): " + Terminal.escaped("\(record)"))
            }
        }
        return configuration
    }

    /// Parses endpoint texts: `HOST:PORT`, `[IPv6]:PORT` or `unix:/path`.
    static func endpoints(_ texts: [String], option: String) throws(UsageError) -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for text in texts {
            guard let endpoint = Endpoint(parsing: text) else {
                throw UsageError("\(option) needs HOST:PORT, [IPv6]:PORT or unix:/path, not '\(text)'")
            }
            endpoints.append(endpoint)
        }
        return endpoints
    }

    /// Splits `METHOD=TEXT` at the first `=`: the method and the payload (TEXT as UTF-8, may be empty).
    static func call(_ text: String, option: String) throws(UsageError) -> (method: String, payload: [UInt8]) {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw UsageError("--\(option) needs METHOD=TEXT (for example login=alice), not '\(text)'")
        }
        return (String(text[..<equals]), Array(text[text.index(after: equals)...].utf8))
    }

    /// `CODE: message` for standard error, CODE the gRPC status name (`NOT_FOUND`). Errors the
    /// client detected itself whose code is not a status also name that code:
    /// `UNAVAILABLE: connectionLost: the link dropped…`. The message is often the server's text
    /// (an error status, a `GoAway` reason): its control characters are escaped.
    static func describe(_ error: any Error) -> String {
        if error is CancellationError { return "CANCELLED: cancelled" }
        guard let error = error as? LongLinkError else { return "UNKNOWN: " + Terminal.escaped("\(error)") }
        let status = error.code.status
        let message = Terminal.escaped(error.message)
        if error.isRemote || error.code == LongLinkError.Code(status: status) {
            return "\(status): \(message)"
        }
        return "\(status): \(error.code): \(message)"
    }

    /// The payload as one field of a line: the text itself when it is UTF-8 without control
    /// characters (no tab, no newline) and does not start with `base64:`; otherwise `base64:` and
    /// the payload in base64. An empty payload is an empty field.
    static func field(_ payload: [UInt8]) -> String {
        if let text = String(validating: payload, as: UTF8.self),
            !text.hasPrefix("base64:"),
            text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value) })
        {
            return text
        }
        return "base64:" + Data(payload).base64EncodedString()
    }

    /// One push as `seq<TAB>topic<TAB>payload` (see ``field(_:)``).
    static func line(for push: Push) -> String {
        "\(push.seq)\t\(field(Array(push.topic.utf8)))\t\(field(push.payload))"
    }

    /// Waits for `task` to finish, at most `timeout`; nil when it is still running then.
    ///
    /// Awaiting a task's result cannot be cancelled, so the wait is a race of two unstructured
    /// tasks feeding one stream; the loser is left to finish on its own.
    static func result(of task: Task<Void, any Error>, within timeout: Duration) async -> Result<Void, any Error>? {
        let (outcomes, continuation) = AsyncStream<Result<Void, any Error>?>.makeStream()
        Task {
            continuation.yield(await task.result)
            continuation.finish()
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            continuation.yield(nil)
            continuation.finish()
        }
        defer { timer.cancel() }
        for await outcome in outcomes { return outcome }
        return nil
    }
}

/// Follows a client's connection states: whether the link is up, and the last failure while it
/// was down, to explain a request that timed out because the server could not be reached.
final class LinkWatcher: Sendable {
    private struct State: Sendable {
        var connected = false
        var endpoint: Endpoint?
        var lastError: LongLinkError?
        /// Why the link was lost, or the last attempt failed (``ConnectionState/cause``).
        var lastCause: DisconnectCause?
    }

    /// The state, shared with the task that follows the client.
    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    private let task: Task<Void, any Error>
    private let reporter: BadInputReporter?

    /// Starts following `client`'s states; each one also goes to `reporter` (which says when the
    /// client recovered from bad server input) and to `report`, if given.
    init(
        _ client: LongLinkClient, reporter: BadInputReporter? = nil,
        report: (@Sendable (ConnectionState) -> Void)? = nil
    ) {
        let states = client.connectionStates
        let shared = self.shared
        self.reporter = reporter
        task = Task {
            for await change in states {
                reporter?.observe(change)
                shared.state.withLock { state in
                    state.connected = change.phase == .connected
                    if let endpoint = change.endpoint { state.endpoint = endpoint }
                    if change.phase == .connected {
                        state.lastError = nil
                        state.lastCause = nil
                    } else {
                        if let error = change.error { state.lastError = error }
                        if let cause = change.cause { state.lastCause = cause }
                    }
                }
                report?(change)
            }
        }
    }

    /// ` (the link to HOST:PORT is down: CAUSE; last attempt: code: message)` when the link is down
    /// after a failure (CAUSE as the states print it: `connection refused`, `heartbeat timeout`),
    /// else empty.
    var hint: String {
        shared.state.withLock { state in
            guard !state.connected, state.lastError != nil || state.lastCause != nil else { return "" }
            let target = state.endpoint.map { " to \($0)" } ?? ""
            let cause = state.lastCause.map { ": " + Terminal.escaped("\($0)") } ?? ""
            let attempt = state.lastError.map { "; last attempt: \($0.code): \(Terminal.escaped($0.message))" } ?? ""
            return " (the link\(target) is down\(cause)\(attempt))"
        }
    }

    /// Waits until every state has been reported (the sequence ends when the client has stopped),
    /// at most `timeout`, then stops following and has the reporter name what was not recovered.
    func finish(within timeout: Duration = .milliseconds(500)) async {
        _ = await ClientSupport.result(of: task, within: timeout)
        task.cancel()
        reporter?.finish()
    }
}

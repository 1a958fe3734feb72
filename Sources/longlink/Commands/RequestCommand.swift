import Foundation
import LongLink
import LongLinkCLISupport

/// `longlink request --endpoint HOST:PORT METHOD`: one request through the LongLink client, the
/// reply's payload on standard output.
enum RequestCommand: Subcommand {
    static let spec = CommandSpec(
        name: "request",
        summary: "Send one request with the LongLink client and print the reply.",
        discussion: """
            Connects to --endpoint, runs the --login call if given, sends METHOD with the payload of
            --data (UTF-8 text) or --data-file (bytes; '-' reads standard input; neither: empty), and
            writes the reply's payload to standard output as raw bytes. A reply that is UTF-8 text
            not ending in a newline gets one added; --raw writes exactly the bytes received.
            When the server breaks the protocol (garbage, a frame too large) the client drops the
            link and reconnects; each time, standard error gets one line 'longlink: the server sent
            bad input (REASON); reconnected' (or '; not reconnected' when the command ended first),
            even when the request then succeeds. Exit status 0 when the reply is OK. Otherwise 1,
            and standard error has one line 'error: CODE: message', CODE the gRPC status name
            (NOT_FOUND, DEADLINE_EXCEEDED, UNAVAILABLE, UNAUTHENTICATED, ...). While the server
            cannot be reached the client keeps the request queued and retries: --timeout bounds
            everything, connecting included.
            Example: longlink request --endpoint 127.0.0.1:7000 echo --data hi
            """,
        positionals: [PositionalSpec("METHOD", help: "The method to call, for example echo, sleep or fail.")],
        options: [
            ClientSupport.endpointOption,
            .value("data", "TEXT", help: "The payload, as UTF-8 text."),
            .value("data-file", "FILE", help: "The payload, read from FILE ('-' for standard input)."),
            .value("timeout", "DURATION", help: "How long to wait for the reply, connecting included (default 10s)."),
            ClientSupport.loginOption,
            ClientSupport.clientIDOption,
            .flag(
                "idempotent",
                help: "Allow a resend after a link drop without de-duplication (no window, or no --login)."),
            .flag("raw", help: "Write the reply's bytes exactly, never adding a newline."),
            ClientSupport.verboseOption,
        ] + ClientSupport.tlsOptions
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let method = arguments.positionals[0]
        guard !method.isEmpty else { throw UsageError("METHOD must not be empty") }
        var configuration = try ClientSupport.configuration(arguments, command: spec.name)
        let timeout = try arguments.duration("timeout") ?? .seconds(10)
        guard timeout > .zero else { throw UsageError("--timeout must be more than zero") }
        // Login calls and the connect attempt stay within the same budget.
        configuration.defaultTimeout = timeout
        configuration.connectTimeout = min(configuration.connectTimeout, timeout)

        let payload: [UInt8]
        switch (arguments.value("data"), arguments.value("data-file")) {
        case (.some, .some):
            throw UsageError("give --data or --data-file, not both")
        case (.some(let text), nil):
            payload = Array(text.utf8)
        case (nil, .some(let path)):
            do {
                payload = try readPayload(path)
            } catch {
                Terminal.standardError.line("longlink request: cannot read \(path): \(error.localizedDescription)")
                return ExitStatus.failure
            }
        case (nil, nil):
            payload = []
        }

        let reporter = BadInputReporter()
        configuration.logger = reporter.logger(passingTo: configuration.logger)
        let client = LongLinkClient(configuration: configuration)
        let watcher = LinkWatcher(client, reporter: reporter)
        let running = Task { try await client.run() }
        let outcome: Result<[UInt8], any Error>
        do {
            let options = RequestOptions(timeout: timeout, idempotent: arguments.flag("idempotent"))
            outcome = .success(try await client.request(method, payload: payload, options: options))
        } catch {
            outcome = .failure(error)
        }
        let hint = watcher.hint
        // Say GoAway and close; a client that cannot stop in time is left behind, the process ends.
        client.shutdown()
        _ = await ClientSupport.result(of: running, within: .seconds(2))
        await watcher.finish()

        switch outcome {
        case .success(let reply):
            var output = reply
            if !arguments.flag("raw"), !reply.isEmpty, reply.last != UInt8(ascii: "\n"),
                String(validating: reply, as: UTF8.self) != nil
            {
                output.append(UInt8(ascii: "\n"))
            }
            Terminal.standardOutput.write(bytes: output)
            return ExitStatus.success
        case .failure(let error):
            let timedOut = (error as? LongLinkError)?.code == .deadlineExceeded
            Terminal.standardError.line("error: " + ClientSupport.describe(error) + (timedOut ? hint : ""))
            return ExitStatus.failure
        }
    }

    private static func readPayload(_ path: String) throws -> [UInt8] {
        if path == "-" {
            return Array(FileHandle.standardInput.readDataToEndOfFile())
        }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

import LongLink
import LongLinkCLISupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `longlink subscribe --endpoint HOST:PORT`: prints pushes as they arrive, one line each, through
/// the LongLink client, which acknowledges each reliable push when it hands it over to be printed
/// (`PushAcknowledgement.atHandOver`), or with `--ack-after-print` only once its line is written
/// (`.afterProcessing`), so that a push never printed comes again.
enum SubscribeCommand: Subcommand {
    static let spec = CommandSpec(
        name: "subscribe",
        summary: "Log in, subscribe and print pushes as they arrive (reliable ones acknowledged).",
        discussion: """
            Connects to --endpoint; after every connect runs --login, then each --subscribe call in
            order, then asks for missed reliable pushes (Sync). Each --enter call is made once the
            client runs, as a run-time subscription: entered again after every reconnect, its reply
            and each replay's on standard error (unless --quiet); a refused one ends the command
            with 'error: CODE: message'. Each push is one line on standard
            output: SEQ<TAB>TOPIC<TAB>PAYLOAD. SEQ is 0 for a best-effort push. PAYLOAD is the text
            when it is UTF-8 without control characters, else 'base64:' and the bytes in base64.
            A reliable push is acknowledged when the client hands it over to be printed; with
            --ack-after-print, only after its line is written, so one that was never printed comes
            again next time. Connection changes go to standard error (unless --quiet); the
            client reconnects by itself. Bad input from the server (garbage, a frame too large) is
            always reported, one line per drop: 'longlink: the server sent bad input (REASON);
            reconnected' (or '; not reconnected' when the command ended first), --quiet or not.
            Exits 0 after --count pushes, or on SIGINT or SIGTERM (graceful: acknowledgements
            flushed, GoAway sent); a second signal exits at once with 1.
            Exits 1 with 'error: CODE: message' when the client stops for good (a login rejected
            with UNAUTHENTICATED, GoAway without reconnect).
            Example: longlink subscribe --endpoint 127.0.0.1:7000 --login login=alice
                       --subscribe 'quotes.subscribe=["AAPL","MSFT"]' --topic alerts
            """,
        options: [
            ClientSupport.endpointOption,
            .value("topic", "TOPIC", help: "Print only pushes on TOPIC (others are left unacknowledged)."),
            .value("count", "N", help: "Exit after N pushes."),
            ClientSupport.loginOption,
            .value(
                "subscribe", "METHOD=TEXT",
                help: "A call replayed after every login (repeatable): quotes.subscribe=[\"AAPL\"]."),
            enterOption,
            ClientSupport.clientIDOption,
            .flag("ack-after-print", help: "Acknowledge a reliable push only after its line is written."),
            .flag("quiet", help: "Do not report connection changes on standard error."),
            ClientSupport.verboseOption,
        ] + ClientSupport.tlsOptions
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        var configuration = try ClientSupport.configuration(arguments, command: spec.name)
        for text in arguments.allValues("subscribe") {
            let call = try ClientSupport.call(text, option: "subscribe")
            configuration.subscriptions.append(Subscription(method: call.method, payload: call.payload))
        }
        let enters = try arguments.allValues("enter").map { text throws(UsageError) in
            try ClientSupport.call(text, option: "enter")
        }
        let count = try arguments.integer("count", in: 1...Int.max)
        let topic = arguments.value("topic")
        // A reader of standard output that goes away (`| head`) ends the command, not the process.
        signal(SIGPIPE, SIG_IGN)

        let reporter = BadInputReporter()
        configuration.logger = reporter.logger(passingTo: configuration.logger)
        let client = LongLinkClient(configuration: configuration)
        // Registered before the client runs: nothing that arrives early is missed.
        let pushes = deliveries(of: client, topic: topic, ackAfterPrint: arguments.flag("ack-after-print"))
        let err = Terminal.standardError
        let quiet = arguments.flag("quiet")
        let watcher = LinkWatcher(client, reporter: reporter) { state in
            if !quiet, state.phase != .idle { err.line("longlink subscribe: " + Terminal.escaped("\(state)")) }
        }
        let running = Task { try await client.run() }
        let entering = Task { await enter(enters, client: client, quiet: quiet) }

        let signalsSeen = Atomic<Int>(0)
        let signals = SignalWatcher([SIGINT, SIGTERM]) { number in
            if signalsSeen.add(1, ordering: .relaxed).newValue == 1 {
                if !quiet { err.line("longlink subscribe: \(SignalWatcher.name(of: number)): shutting down") }
                client.shutdown()
            } else {
                err.line("longlink subscribe: \(SignalWatcher.name(of: number)) again, exiting now")
                exit(ExitStatus.failure)
            }
        }
        defer { signals.cancel() }

        let printedReliable = await print(pushes, count: count) { Terminal.standardOutput.line($0) }.reliable

        // The client learns that a push was taken on its event loop; once it has counted every
        // printed one, the shutdown below sends their acknowledgements before GoAway.
        let deadline = ContinuousClock.now.advanced(by: .seconds(1))
        while await client.statistics.pushesDelivered < printedReliable, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        client.shutdown()
        let outcome = await ClientSupport.result(
            of: running, within: configuration.shutdownGracePeriod + .seconds(2))
        await watcher.finish()
        if case .failure(let error) = outcome {
            err.line("error: " + ClientSupport.describe(error))
            return ExitStatus.failure
        }
        if let error = await entering.value {
            err.line("error: " + ClientSupport.describe(error))
            return ExitStatus.failure
        }
        return ExitStatus.success
    }
}

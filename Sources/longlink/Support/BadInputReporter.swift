import LongLink
import LongLinkCLISupport
import Synchronization

/// Turns the client's silent recoveries from bad server input into one line each on standard
/// error, so that someone testing a server sees that it broke the protocol even when the request
/// then succeeds on a new link.
///
/// Two public signals of the client are combined. The client's log says what was wrong: a record
/// at `.warning` or above whose message starts with ``prefix``; the rest of the message is the
/// reason. The connection states say whether the client got over it: a violation counts as
/// recovered once a state that only follows a failed link (`waitingToReconnect`, or any state
/// short of `connected` that carries an error) and then `connected` have been seen after it. The
/// log arrives at once, the states later through a stream; requiring the drop before the
/// `connected` keeps a stale `connected`, sent before the violation but read after it, from
/// counting as the recovery.
///
/// Lines, one per violation:
/// - `longlink: the server sent bad input (REASON); reconnected`, when the client is connected again;
/// - `longlink: the server sent bad input (REASON); not reconnected`, from ``finish()``, for
///   violations the command ended before recovering from.
final class BadInputReporter: Sendable {
    /// How the client's log starts a record about the server breaking the protocol.
    static let prefix = "protocol violation by the server"

    private struct State {
        /// Reasons logged whose link drop has not been seen in the states yet.
        var logged: [String] = []
        /// Reasons whose link drop has been seen; the next `connected` recovers them.
        var dropped: [String] = []
    }

    private let state = Mutex(State())
    private let write: @Sendable (String) -> Void

    /// - Parameter write: Receives each line (without the newline); standard error by default.
    init(write: @escaping @Sendable (String) -> Void = { Terminal.standardError.line($0) }) {
        self.write = write
    }

    /// A logger for ``ClientConfiguration/logger`` that notes violations and passes every record on
    /// to `next` (the `--verbose` log), if any.
    func logger(passingTo next: (@Sendable (LogRecord) -> Void)?) -> @Sendable (LogRecord) -> Void {
        { [self] record in
            note(record)
            next?(record)
        }
    }

    /// Notes `record` if it is about bad input from the server.
    func note(_ record: LogRecord) {
        note(level: record.level, message: record.message)
    }

    /// Notes a record's level and message if they are about bad input from the server.
    func note(level: LogRecord.Level, message: String) {
        guard let reason = Self.reason(level: level, message: message) else { return }
        state.withLock { $0.logged.append(reason) }
    }

    /// Follows the client's link: a drop after a logged violation, then `connected`, is a recovery.
    func observe(_ change: ConnectionState) {
        let recovered = state.withLock { state -> [String] in
            if change.phase == .connected {
                defer { state.dropped.removeAll() }
                return state.dropped
            }
            let followsAFailure =
                change.phase == .waitingToReconnect || (change.error != nil && change.phase != .stopped)
            if followsAFailure {
                state.dropped += state.logged
                state.logged.removeAll()
            }
            return []
        }
        for reason in recovered { write(Self.line(reason, reconnected: true)) }
    }

    /// Reports the violations not recovered from; call once the client has stopped.
    func finish() {
        let left = state.withLock { state -> [String] in
            defer {
                state.dropped.removeAll()
                state.logged.removeAll()
            }
            return state.dropped + state.logged
        }
        for reason in left { write(Self.line(reason, reconnected: false)) }
    }

    /// The reason in a record about bad server input: the message after ``prefix`` and its `: `;
    /// nil for every other record.
    static func reason(level: LogRecord.Level, message: String) -> String? {
        guard level >= .warning, message.hasPrefix(prefix) else { return nil }
        let rest = message.dropFirst(prefix.count).drop { $0 == ":" || $0 == " " }
        return rest.isEmpty ? "no reason given" : String(rest)
    }

    /// One line of the report.
    static func line(_ reason: String, reconnected: Bool) -> String {
        "longlink: the server sent bad input (\(Terminal.escaped(reason))); "
            + (reconnected ? "reconnected" : "not reconnected")
    }
}

import Dispatch
import Foundation
import LongLinkCLISupport
import Synchronization

/// Log lines that never block the caller: lines are written to a terminal on a queue of their own,
/// so a server handler or event-loop thread that logs never waits for a slow (or stuck) reader of
/// standard output. At most ``maxPending`` lines wait; more are dropped and counted, and the
/// count is written before the next line that gets through. After a failed write (the reader went
/// away) nothing more is written.
final class EventLog: Sendable {
    static let maxPending = 1_000

    let isEnabled: Bool
    private let terminal: Terminal
    private let queue = DispatchQueue(label: "longlink.event-log")
    private let pending = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    private let broken = Atomic<Bool>(false)
    private let start = ContinuousClock.now

    init(terminal: Terminal = .standardOutput, isEnabled: Bool = true) {
        self.terminal = terminal
        self.isEnabled = isEnabled
    }

    /// Queues `message` as one line, prefixed with the time since the log was created: `[+12.345s]`.
    func callAsFunction(_ message: String) {
        guard isEnabled, !broken.load(ordering: .relaxed) else { return }
        guard pending.add(1, ordering: .relaxed).newValue <= Self.maxPending else {
            pending.subtract(1, ordering: .relaxed)
            dropped.add(1, ordering: .relaxed)
            return
        }
        let elapsed = ContinuousClock.now - start
        let stamp = terminal.styled(
            String(
                format: "[+%.3fs]", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18),
            .dim)
        let line = stamp + " " + message
        queue.async { [self] in
            defer { pending.subtract(1, ordering: .relaxed) }
            guard !broken.load(ordering: .relaxed) else { return }
            var text = ""
            let lost = dropped.exchange(0, ordering: .relaxed)
            if lost > 0 { text += "(\(lost) log lines dropped)\n" }
            text += line + "\n"
            if !terminal.write(text) { broken.store(true, ordering: .relaxed) }
        }
    }

    /// Waits until every queued line is written.
    func flush() {
        queue.sync {}
    }
}

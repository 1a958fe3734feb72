import LongLinkCore
import Dispatch
import LongLinkTestSupport
import LongLinkTransport

@testable import LongLinkServer

/// A wall clock the test moves (ms since 1970), for the de-dup window's expiries.
final class TestWallClock: Sendable {
    private let milliseconds = Locked<Int64>(1_700_000_000_000)

    var now: @Sendable () -> Int64 { { [milliseconds] in milliseconds.withLock { $0 } } }

    func advance(by duration: Duration) {
        milliseconds.withLock { $0 += DurableWriter.milliseconds(duration) }
    }
}

extension DurableEngine {
    /// An engine on `directory` with `configuration`, its time from `clock` when given.
    static func open(
        _ directory: TemporaryDirectory, _ configuration: DurableStoreConfiguration = .init(),
        clock: TestWallClock? = nil
    ) throws(LongLinkError) -> DurableEngine {
        try DurableEngine(directory: directory.path, configuration: configuration, now: clock?.now ?? wallClock)
    }
}

/// The store's writer thread held by a test: what is queued meanwhile waits, and goes in one turn
/// once ``letGo()`` is called.
struct HeldWriter {
    let hold: Task<Void, any Error>
    let release: DispatchSemaphore

    /// Lets the writer go and waits until the hold has ended.
    func letGo() async throws {
        release.signal()
        try await hold.value
    }
}

extension DurableEngine {
    /// Holds the writer thread (as a read of its turn) until the returned hold is let go.
    func holdWriter() async throws -> HeldWriter {
        let held = Mailbox<Void>()
        let release = DispatchSemaphore(value: 0)
        let hold = Task {
            try await onWriter {
                held.put(())
                release.wait()
            }
        }
        try await held.next(within: .seconds(10), "the writer held")
        return HeldWriter(hold: hold, release: release)
    }
}

/// The error `operation` throws as a `LongLinkError`, or nil when it returns.
func failure(_ operation: () async throws -> Void) async -> LongLinkError? {
    do {
        try await operation()
        return nil
    } catch {
        return error as? LongLinkError ?? LongLinkError(code: .unknown, message: "\(error)")
    }
}

/// The text of `payloads`.
func texts(_ pushes: [StoredPush]) -> [String] {
    pushes.map { String(decoding: $0.payload, as: UTF8.self) }
}

import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns signals (SIGINT, SIGTERM) into calls of a handler on a queue, instead of the default
/// action. The signals are ignored at the process level (`SIG_IGN`) so that only the dispatch
/// sources see them; they stay ignored after ``cancel()``.
final class SignalWatcher: Sendable {
    /// Dispatch sources are not marked Sendable; the mutex makes handing them between threads safe.
    private let sources: Mutex<[any DispatchSourceSignal]>

    /// Starts watching; `handler` receives the signal number, once per delivery.
    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "longlink.signals")
        let created = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
        sources = Mutex(created)
    }

    /// Stops watching.
    func cancel() {
        sources.withLock { sources in
            for source in sources { source.cancel() }
        }
    }

    /// `SIGINT`, `SIGTERM`, or the number.
    static func name(of number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}

/// A log record from the client: what ``ClientConfiguration/logger`` receives.
///
/// Shaped like a swift-log `LogHandler` call, so an adapter is a few lines: ``Level-swift.enum``
/// has swift-log's seven levels under the same raw values, ``message`` is the message, and
/// ``metadata`` maps to `Logger.Metadata` with `.string` values (see the logging guide).
/// Records never contain payloads or credentials.
public struct LogRecord: Sendable, CustomStringConvertible {
    /// How much attention the record deserves: swift-log's levels, with its raw values, from the
    /// least to the most severe.
    public enum Level: String, Sendable, Comparable, CaseIterable {
        /// Fine-grained tracing.
        case trace
        /// Details for debugging.
        case debug
        /// Normal events (connected, reconnecting).
        case info
        /// Normal but significant events.
        case notice
        /// Something went wrong and was handled.
        case warning
        /// Something went wrong for good.
        case error
        /// The client cannot go on.
        case critical

        private var severity: Int {
            switch self {
            case .trace: 0
            case .debug: 1
            case .info: 2
            case .notice: 3
            case .warning: 4
            case .error: 5
            case .critical: 6
            }
        }

        /// Orders levels by severity.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.severity < rhs.severity }
    }

    /// The severity.
    public var level: Level
    /// What happened; never payloads or credentials.
    public var message: String
    /// Structured context (an endpoint, a topic, a phase); never payloads or credentials.
    public var metadata: [String: String]

    /// Creates a record.
    public init(level: Level, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }

    /// `[level] message key=value …`, the metadata sorted by key.
    public var description: String {
        let context = metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        return "[\(level)] \(message)\(context)"
    }
}

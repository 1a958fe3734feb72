/// How a client enforces request deadlines. Callers see the same contract either way: `await`
/// returns the reply, or throws deadline-exceeded when the deadline passes.
public struct DeadlineStrategy: Hashable, Sendable, CustomStringConvertible {
    private enum Wrapped: Hashable, Sendable {
        case taskGroup
        case deadlineHeap
    }

    private let wrapped: Wrapped

    /// Each request runs in a task group whose body awaits the reply while one child task sleeps
    /// until the deadline (on the client's clock, released at once when the reply wins). The shape
    /// of the design card, at the price of a child task and a timer per request: measured at about
    /// two thirds of the heap's throughput and 1.3x its latency.
    public static let taskGroup = DeadlineStrategy(wrapped: .taskGroup)

    /// The client keeps pending requests in one deadline index (a heap of millisecond buckets) with
    /// a single timer for the earliest bucket, due as its millisecond ends; cancellation is a
    /// handler outside the actor. No task and no timer per request. The default.
    public static let deadlineHeap = DeadlineStrategy(wrapped: .deadlineHeap)

    var usesHeap: Bool { wrapped == .deadlineHeap }

    /// `taskGroup` or `deadlineHeap`.
    public var description: String {
        switch wrapped {
        case .taskGroup: "taskGroup"
        case .deadlineHeap: "deadlineHeap"
        }
    }
}

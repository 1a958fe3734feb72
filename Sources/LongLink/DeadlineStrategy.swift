/// How a client enforces request deadlines. Callers see the same contract either way: `await`
/// returns the reply, or throws deadline-exceeded when the deadline passes.
public struct DeadlineStrategy: Hashable, Sendable, CustomStringConvertible {
    private enum Wrapped: Hashable, Sendable {
        case taskGroup
        case deadlineHeap
    }

    private let wrapped: Wrapped

    /// Each request runs in a task group whose body awaits the reply while one child task sleeps
    /// until the deadline (on the client's clock, released on the loop's next turn when the reply wins). The shape
    /// of the design card and the default; it costs a child task and a timer per request.
    public static let taskGroup = DeadlineStrategy(wrapped: .taskGroup)

    /// The client keeps every pending request's deadline in one index (a binary heap) with a single
    /// timer for the earliest, handled at most once a millisecond. No task and no timer per
    /// request: the opt-in for many requests in flight, with the same contract for callers.
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

/// A timer scheduled with ``EventLoop/scheduleTimer(after:_:)``; pass it to ``EventLoop/cancelTimer(_:)``.
public struct EventLoopTimer: Hashable, Sendable {
    let id: UInt64
}

/// A bounded wait that ran out.
package struct ConditionTimedOut: Error, CustomStringConvertible {
    package let what: String

    package init(what: String) {
        self.what = what
    }

    package var description: String { "timed out waiting until \(what)" }
}

/// Re-checks a condition (a counter another thread updates) until it holds, within a bound. For
/// values nothing can be awaited on; everything else waits on a `Mailbox` or a continuation.
package func eventually(
    _ what: String, within timeout: Duration = .seconds(20), _ condition: () async -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while await !condition() {
        guard ContinuousClock.now < deadline else { throw ConditionTimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Fails with `ConditionTimedOut` when `operation` takes longer than `timeout`.
package func within<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw ConditionTimedOut(what: what)
        }
        let value = try await group.next()!
        group.cancelAll()
        return value
    }
}

/// The UTF-8 bytes of `text`.
package func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

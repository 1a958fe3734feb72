import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLink

@Suite("Expired callers")
struct ExpiredCallersTests {
    /// The suspended callers' continuations, and how each caller was resumed (`Locked`, which
    /// ThreadSanitizer follows).
    private final class Registry: Sendable {
        let callers = Locked<[Int: PendingCall.Caller]>([:])
        let outcomes = Locked<[Int: [LongLinkError.Code?]]>([:])

        var suspended: Int { callers.withLock { $0.count } }
        var resumed: Int { outcomes.withLock { $0.count } }
    }

    /// Several takers at once (as the loop and its helper jobs): every caller is resumed exactly
    /// once with the timeout, and the takers' counts add up to the callers, whether the callers
    /// fill part of one chunk, exactly one chunk, or several and a remainder.
    ///
    /// The callers are unstructured tasks, so that a caller left suspended fails the bounded wait
    /// below instead of holding the test forever.
    @Test(arguments: [1, ExpiredCallers.chunkSize, 3 * ExpiredCallers.chunkSize + 17])
    func everyCallerIsResumedOnceBySomeTaker(count: Int) async throws {
        let registry = Registry()
        for caller in 0..<count {
            Task {
                let outcome = await withUnsafeContinuation { continuation in
                    registry.callers.withLock { $0[caller] = continuation }
                }
                var code: LongLinkError.Code?
                do {
                    _ = try outcome.get()
                } catch let error as LongLinkError {
                    code = error.code
                } catch {}
                registry.outcomes.withLock { $0[caller, default: []].append(code) }
            }
        }
        try await eventually("every caller suspended") { registry.suspended == count }
        let callers = registry.callers.withLock { state in (0..<count).map { state[$0]! } }
        let expired = ExpiredCallers(callers)
        #expect(expired.count == count)
        let resumedByTakers = await withTaskGroup(of: Int.self) { takers in
            for _ in 0..<4 { takers.addTask { expired.resumeChunks() } }
            return await takers.reduce(0, +)
        }
        #expect(resumedByTakers == count)
        // Every chunk was taken: a late taker finds nothing left.
        #expect(expired.resumeChunks() == 0)
        try await eventually("every caller resumed") { registry.resumed == count }
        let outcomes = registry.outcomes.withLock { $0 }
        #expect(outcomes.values.allSatisfy { $0 == [.deadlineExceeded] })
    }
}

import LongLinkTestSupport
import Synchronization
import Testing

@testable import LongLink

@Suite("Resume batch")
struct ResumeBatchTests {
    /// The continuations of suspended callers, by caller.
    private final class Registry: Sendable {
        let callers = Mutex<[Int: ResumeBatch.Caller]>([:])

        var count: Int { callers.withLock { $0.count } }
    }

    private static func outcome(caller: Int, round: Int) -> [UInt8] {
        [UInt8(round), UInt8(caller % 256), UInt8(caller / 256)]
    }

    /// Every caller of a batch is resumed, with its own outcome, whether the batch is resumed on
    /// the calling thread (below the threshold) or in chunks off it (at and above it, and over
    /// several chunks); the emptied batch is used again for a second round.
    @Test(arguments: [
        1, ResumeBatch.offLoopThreshold - 1, ResumeBatch.offLoopThreshold, 2 * ResumeBatch.chunkSize + 5,
    ])
    func resumesEveryCallerWithItsOwnOutcome(count: Int) async throws {
        try await within(.seconds(60), "every caller resumed") {
            var batch = ResumeBatch()
            for round in 0..<2 {
                let registry = Registry()
                try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                    for caller in 0..<count {
                        group.addTask {
                            let outcome = await withUnsafeContinuation { continuation in
                                registry.callers.withLock { $0[caller] = continuation }
                            }
                            return (caller, try outcome.get())
                        }
                    }
                    try await eventually("every caller suspended") { registry.count == count }
                    // Appended in reverse, so that an outcome resumed by position would be a wrong one.
                    let callers = registry.callers.withLock { $0 }
                    for caller in (0..<count).reversed() {
                        batch.append(callers[caller]!, .reply(Self.outcome(caller: caller, round: round)))
                    }
                    #expect(batch.count == count)
                    batch.resumeAll()
                    #expect(batch.isEmpty)
                    var resumed = Set<Int>()
                    for try await (caller, payload) in group {
                        #expect(payload == Self.outcome(caller: caller, round: round))
                        resumed.insert(caller)
                    }
                    #expect(resumed.count == count)
                }
            }
        }
    }

    /// A batch carries failures and timeouts as well as replies.
    @Test func resumesFailuresAndTimeouts() async throws {
        try await within(.seconds(30), "both callers resumed") {
            let registry = Registry()
            try await withThrowingTaskGroup(of: (Int, LongLinkError.Code?).self) { group in
                for caller in 0..<2 {
                    group.addTask {
                        let outcome = await withUnsafeContinuation { continuation in
                            registry.callers.withLock { $0[caller] = continuation }
                        }
                        do {
                            _ = try outcome.get()
                            return (caller, nil)
                        } catch let error as LongLinkError {
                            return (caller, error.code)
                        }
                    }
                }
                try await eventually("both callers suspended") { registry.count == 2 }
                let callers = registry.callers.withLock { $0 }
                var batch = ResumeBatch()
                batch.append(callers[0]!, .timedOut)
                batch.append(callers[1]!, .failed(LongLinkError(code: .unavailable, message: "test")))
                batch.resumeAll()
                var codes: [Int: LongLinkError.Code?] = [:]
                for try await (caller, code) in group { codes[caller] = code }
                #expect(codes[0] == .deadlineExceeded)
                #expect(codes[1] == .unavailable)
            }
        }
    }
}

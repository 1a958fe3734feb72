import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Submission inbox")
struct SubmissionInboxTests {
    /// Only the first submission into an empty inbox asks for a drain, and a take hands back
    /// everything in the order it was submitted.
    @Test func firstSubmissionAsksForTheDrainAndTakeKeepsTheOrder() {
        let inbox = SubmissionInbox()
        var batch: [PendingCall] = []
        inbox.take(into: &batch)
        #expect(batch.isEmpty)
        #expect(inbox.append(testCall(1)))
        #expect(!inbox.append(testCall(2)))
        #expect(!inbox.append(testCall(3)))
        inbox.take(into: &batch)
        #expect(batch.map(\.id) == [1, 2, 3])
        #expect(batch.allSatisfy { $0.nextSubmission == nil })
        #expect(inbox.append(testCall(4)))
        inbox.take(into: &batch)
        #expect(batch.map(\.id) == [1, 2, 3, 4])
    }

    /// Calls still in an inbox when it goes away are released with it, not leaked.
    @Test func callsNeverTakenAreReleasedWithTheInbox() {
        weak var untaken: PendingCall?
        do {
            let inbox = SubmissionInbox()
            let call = testCall(1)
            untaken = call
            _ = inbox.append(call)
            _ = inbox.append(testCall(2))
        }
        #expect(untaken == nil)
    }

    /// Submitters on several threads while the loop's side takes: every call comes out exactly
    /// once, each submitter's in its own order, and exactly one submission per non-empty take
    /// asked for a drain (so no call waits without a drain scheduled, and no drain is wasted).
    @Test func concurrentSubmittersLoseNothingAndAskForOneDrainPerBatch() async throws {
        let submitters = 4
        let perSubmitter: UInt64 = 5_000
        let inbox = SubmissionInbox()
        try await within(.seconds(20), "every submission taken") {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for submitter in 0..<UInt64(submitters) {
                    group.addTask {
                        var drainsAsked = 0
                        for sequence in 0..<perSubmitter {
                            if inbox.append(testCall(submitter << 32 | sequence)) { drainsAsked += 1 }
                            // Lets the taker in between, so that the run has many batches.
                            if sequence % 64 == 0 { await Task.yield() }
                        }
                        return drainsAsked
                    }
                }
                var taken: [PendingCall] = []
                var nonEmptyTakes = 0
                while taken.count < submitters * Int(perSubmitter) {
                    let before = taken.count
                    inbox.take(into: &taken)
                    if taken.count > before { nonEmptyTakes += 1 } else { await Task.yield() }
                }
                var drainsAsked = 0
                for try await asked in group { drainsAsked += asked }
                var next = [UInt64](repeating: 0, count: submitters)
                for call in taken {
                    let submitter = Int(call.id >> 32)
                    #expect(call.id & 0xFFFF_FFFF == next[submitter], "submitter \(submitter) out of order")
                    next[submitter] = (call.id & 0xFFFF_FFFF) + 1
                }
                #expect(next == [UInt64](repeating: perSubmitter, count: submitters))
                #expect(drainsAsked == nonEmptyTakes)
            }
        }
    }
}

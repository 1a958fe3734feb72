import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLink

@Suite("Resume batch")
struct ResumeBatchTests {
    /// The continuations of suspended callers, by caller. `Locked` (a pthread mutex) rather than
    /// `Mutex`: ThreadSanitizer sees the former's lock and unlock, not the latter's futex.
    private final class Registry: Sendable {
        let callers = Locked<[Int: PendingCall.Caller]>([:])

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
                    let handedOff = batch.resumeAll()
                    #expect(handedOff == (count < ResumeBatch.offLoopThreshold ? 0 : count))
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

    /// End to end: a server holds 300 requests, then answers them all in one write, last request
    /// first, every seventh with an error. The client reads them in one go (or a few), so they
    /// are resumed off the loop, and every caller gets its own reply or error.
    @Test func repliesOfOneReadResumeTheirOwnCallers() async throws {
        let count = 300
        let held = Mailbox<Frame.Request>()
        let server = try await ScriptedServer.holdingRequests(in: held)
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        let peer = try await server.nextPeer()
        let client = running.client
        let outcomes = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for caller in 0..<count {
                group.addTask {
                    do {
                        return (caller, text(try await client.request("echo", payload: bytes("call \(caller)"))))
                    } catch let error as LongLinkError {
                        return (caller, "error \(error.code)")
                    }
                }
            }
            var requests: [Frame.Request] = []
            for _ in 0..<count { requests.append(try await held.next()) }
            var reply: [UInt8] = []
            for request in requests.reversed() {
                let caller = Int(text(request.payload).dropFirst("call ".count)) ?? -1
                let response =
                    caller % 7 == 0
                    ? Frame.Response(
                        requestID: request.requestID, status: Frame.Status(code: .unavailable, message: "busy"))
                    : Frame.Response(requestID: request.requestID, payload: request.payload)
                Frame.response(response).encodeDelimited(into: &reply)
            }
            peer.sendRaw(reply)
            var outcomes: [Int: String] = [:]
            for try await (caller, outcome) in group { outcomes[caller] = outcome }
            return outcomes
        }
        #expect(outcomes.count == count)
        for caller in 0..<count {
            let expected = caller % 7 == 0 ? "error \(LongLinkError.Code.unavailable)" : "call \(caller)"
            #expect(outcomes[caller] == expected, "caller \(caller)")
        }
        #expect(client.callersResumedOffLoop >= ResumeBatch.offLoopThreshold)
        await running.stop()
        server.stop()
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

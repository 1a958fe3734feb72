import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// The de-duplication window's budgets, one bound at a time: entries (running and finished) and
/// stored reply bytes, per client, per principal and in all. At each, a client gives up only its
/// own oldest finished entries; when that cannot make room, the new request is refused before it
/// runs, or the reply is kept as a marker. Nobody else's entry is ever evicted.
@Suite("DedupeWindow budgets", .sharedMachine)
struct DedupeBudgetTests {
    let now = ContinuousClock.now

    static func limits(_ set: (inout DedupeLimits) -> Void) -> DedupeLimits {
        var limits = DedupeLimits()
        set(&limits)
        return limits
    }

    @Test func aClientAtItsEntryBoundGivesUpItsOwnOldest() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.entriesPerClient = 3 })
        #expect(window.store(["v1"], client: "victim", principal: "ann", now: now) == true)
        #expect(window.store(["a", "b", "c", "d"], client: "flood", principal: "ann", now: now) == true)
        #expect(window.count == 4)
        #expect(window.arrive("a", client: "flood", principal: "ann", waiter: 0, now: now) == "execute")
        #expect(window.arrive("v1", client: "victim", principal: "ann", waiter: 0, now: now) == "replay v1")
        #expect(window.refusals == 0)
    }

    /// Running entries count: a client whose share is all running has nothing to give up, and its
    /// next request is refused (with a hint to retry soon) rather than run unremembered.
    @Test func runningEntriesCountAndAClientWithNoneFinishedIsRefused() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.entriesPerClient = 2 })
        #expect(window.arrive("r1", principal: "ann", waiter: 0, now: now) == "execute")
        #expect(window.arrive("r2", principal: "ann", waiter: 0, now: now) == "execute")
        let refused = window.arrive("r3", principal: "ann", waiter: 0, now: now)
        #expect(refused.hasPrefix("refuse RESOURCE_EXHAUSTED"), "\(refused)")
        #expect(refused.contains("this client's 2 entries") && refused.contains("retry in 100 ms"), "\(refused)")
        #expect(window.refusals == 1)
        #expect(window.count == 2)
        // A copy of a running request still joins it.
        #expect(window.arrive("r1", principal: "ann", waiter: 1, now: now) == "wait")
    }

    @Test func aPrincipalsBoundRefusesAClientWithNothingOfItsOwnAndEvictsNoSibling() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.entriesPerPrincipal = 4 })
        #expect(window.store(["a1", "a2", "a3"], client: "a", principal: "ann", now: now) == true)
        #expect(window.store(["b1"], client: "b", principal: "ann", now: now) == true)
        // Full for ann: a third client of hers has nothing to give up.
        let refused = window.arrive("c1", client: "c", principal: "ann", waiter: 0, now: now)
        #expect(refused.contains("this principal's 4 entries"), "\(refused)")
        // b gives up its own (b1), never a's.
        #expect(window.arrive("b2", client: "b", principal: "ann", waiter: 0, now: now) == "execute")
        #expect(window.arrive("b1", client: "b", principal: "ann", waiter: 0, now: now).hasPrefix("refuse"))
        for id in ["a1", "a2", "a3"] {
            #expect(window.arrive(id, client: "a", principal: "ann", waiter: 0, now: now) == "replay \(id)")
        }
        // Another principal is not held by ann's bound.
        #expect(window.arrive("c1", client: "c", principal: "bob", waiter: 0, now: now) == "execute")
    }

    @Test func theWindowsBoundRefusesANewcomerAndEvictsNobody() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.entries = 3 })
        #expect(window.store(["v1"], client: "victim", principal: "vic", now: now) == true)
        #expect(window.store(["x1", "x2"], client: "flood", principal: "mal", now: now) == true)
        let refused = window.arrive("n1", client: "new", principal: "nu", waiter: 0, now: now)
        #expect(refused.contains("the server's 3 entries"), "\(refused)")
        // The flood goes on only by giving up its own.
        #expect(window.arrive("x3", client: "flood", principal: "mal", waiter: 0, now: now) == "execute")
        #expect(window.arrive("v1", client: "victim", principal: "vic", waiter: 0, now: now) == "replay v1")
        #expect(window.count == 3)
    }

    /// A client gives up nothing when giving up all it has would not make room: a reply that
    /// would not fit its principal's bytes even then is a marker, and the client's older replies
    /// stay.
    @Test func aReplyThatCannotFitGivesUpNothing() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.bytesPerPrincipal = 10 })
        #expect(window.store(["aaaa"], client: "a", principal: "ann", now: now) == true)
        #expect(window.store(["bbbbbb"], client: "b", principal: "ann", now: now) == true)
        #expect(window.arrive("a2", client: "a", principal: "ann", waiter: 0, now: now) == "execute")
        _ = window.finish("a2", text: "12345678", now: now)
        #expect(window.repliesNotKept == 1)
        #expect(window.arrive("aaaa", client: "a", principal: "ann", waiter: 0, now: now) == "replay aaaa")
        #expect(window.storedBytes == 10)
    }

    @Test func aClientAtItsByteBoundGivesUpItsOwnOldestReplies() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.bytesPerClient = 10 })
        #expect(window.store(["vvvv"], client: "victim", principal: "ann", now: now) == true)
        #expect(window.store(["aaaa", "bbbb", "cccc"], client: "flood", principal: "ann", now: now) == true)
        // Four bytes each: the flood keeps two.
        #expect(window.storedBytes == 12)
        #expect(window.arrive("aaaa", client: "flood", principal: "ann", waiter: 0, now: now) == "execute")
        #expect(window.arrive("cccc", client: "flood", principal: "ann", waiter: 0, now: now) == "replay cccc")
        #expect(window.arrive("vvvv", client: "victim", principal: "ann", waiter: 0, now: now) == "replay vvvv")
        #expect(window.repliesNotKept == 0)
    }

    @Test func aPrincipalsAndTheWindowsByteBoundsTakeOnlyTheClientsOwn() {
        var window = DedupeWindowProbe(
            limits: Self.limits {
                $0.bytesPerPrincipal = 12
                $0.bytes = 20
            })
        #expect(window.store(["a1aa", "a2aa"], client: "a", principal: "ann", now: now) == true)
        #expect(window.store(["b1bb", "b2bb"], client: "b", principal: "bob", now: now) == true)
        // ann's third and fourth: a gives up its own oldest to stay within 12 for ann.
        #expect(window.store(["a3aa", "a4aa"], client: "a", principal: "ann", now: now) == true)
        #expect(window.arrive("a1aa", client: "a", principal: "ann", waiter: 0, now: now) == "execute")
        _ = window.finish("a1aa", text: "a1aa", now: now)
        #expect(window.storedBytes <= 20)
        // The window's 20: bob's c gives up nothing of a's or b's; its own reply is a marker.
        #expect(window.store(["c1cc"], client: "c", principal: "bob", now: now) == true)
        #expect(
            window.arrive("c1cc", client: "c", principal: "bob", waiter: 0, now: now) == "replay !RESOURCE_EXHAUSTED")
        #expect(window.arrive("b1bb", client: "b", principal: "bob", waiter: 0, now: now) == "replay b1bb")
        #expect(window.arrive("b2bb", client: "b", principal: "bob", waiter: 0, now: now) == "replay b2bb")
        #expect(window.repliesNotKept == 1)
    }

    /// A reply larger than the client's bytes is not kept: a marker holds its place, so that a
    /// resend is answered RESOURCE_EXHAUSTED and never runs again; the client's other replies are
    /// not given up for it.
    @Test func aReplyTooLargeToKeepLeavesAMarkerThatIsNeverRunAgain() {
        var window = DedupeWindowProbe(limits: Self.limits { $0.bytesPerClient = 8 })
        #expect(window.store(["small"], client: "c", principal: "ann", now: now) == true)
        #expect(window.arrive("big", client: "c", principal: "ann", waiter: 7, now: now) == "execute")
        #expect(window.finish("big", text: "0123456789", now: now) == [7])
        #expect(window.repliesNotKept == 1)
        #expect(window.storedBytes == 5)
        #expect(
            window.arrive("big", client: "c", principal: "ann", waiter: 0, now: now) == "replay !RESOURCE_EXHAUSTED")
        #expect(window.arrive("small", client: "c", principal: "ann", waiter: 0, now: now) == "replay small")
        #expect(StoredReply.notKept.response.status?.message.contains("ran once") == true)
    }

    @Test func bytesAndEntriesAreGivenBackWhenEntriesExpire() {
        var window = DedupeWindowProbe(window: .seconds(1), limits: Self.limits { $0.entriesPerClient = 2 })
        #expect(window.store(["aaaa", "bbbb"], client: "c", principal: "ann", now: now) == true)
        #expect(window.storedBytes == 8 && window.count == 2)
        let later = now.advanced(by: .seconds(2))
        #expect(window.arrive("x", client: "other", principal: "bob", waiter: 0, now: later) == "execute")
        #expect(window.storedBytes == 0 && window.count == 1)
    }

    /// What the window keeps to find entries to expire and give up stays proportional to its
    /// entries: a client recycling its own entries at its bound, and one under every bound, each
    /// send a request a millisecond for 20,000 of them within one window.
    @Test func bookkeepingIsBoundedByTheEntriesNotTheRequestRate() {
        var window = DedupeWindowProbe(
            window: .seconds(1_000), limits: Self.limits { $0.entriesPerClient = 100 })
        for index in 0..<20_000 {
            let now = now.advanced(by: .milliseconds(index))
            #expect(window.store(["r\(index)"], client: "busy", principal: "ann", now: now) == true)
        }
        #expect(window.count == 100)
        #expect(window.bookkeepingRecords <= 2 * (2 * window.count + 1_024), "\(window.bookkeepingRecords)")
        var quiet = DedupeWindowProbe(window: .milliseconds(50), limits: DedupeLimits())
        for index in 0..<20_000 {
            let now = now.advanced(by: .milliseconds(index))
            #expect(quiet.store(["q\(index)"], client: "steady", principal: "ann", now: now) == true)
        }
        #expect(quiet.count <= 52)
        #expect(quiet.bookkeepingRecords <= 2 * (2 * quiet.count + 1_024), "\(quiet.bookkeepingRecords)")
    }

    /// A login's binding is kept with its entry: a copy answered from it binds as the original did.
    @Test func aReplayCarriesTheExecutionsBinding() {
        var window = DedupeWindowProbe(limits: DedupeLimits())
        #expect(window.arrive("l1", client: "c", principal: "ann", waiter: 0, now: now) == "execute")
        window.bind("bob")
        _ = window.finish("l1", text: "welcome", now: now)
        #expect(window.arrive("l1", client: "c", principal: "ann", waiter: 0, now: now) == "replay welcome bound bob")
    }

    /// Client and request ids are their bytes: "\u{E9}" and "e\u{301}", one Swift `String`, are two.
    @Test func idsAreComparedAsBytes() {
        #expect("\u{E9}" == "e\u{301}")
        let composed = DedupeKey(clientID: "\u{E9}", principal: "ann", requestID: "1")
        #expect(composed != DedupeKey(clientID: "e\u{301}", principal: "ann", requestID: "1"))
        #expect(composed != DedupeKey(clientID: "\u{E9}", principal: "ann", requestID: "1").with(requestID: "\u{E9}"))
        #expect(
            DedupeKey(clientID: "c", principal: "ann", requestID: "\u{E9}")
                != DedupeKey(clientID: "c", principal: "ann", requestID: "e\u{301}"))
        var window = DedupeWindowProbe(limits: DedupeLimits())
        #expect(window.store(["\u{E9}"], client: "\u{E9}", principal: "ann", now: now) == true)
        #expect(window.arrive("\u{E9}", client: "e\u{301}", principal: "ann", waiter: 0, now: now) == "execute")
        #expect(window.arrive("e\u{301}", client: "\u{E9}", principal: "ann", waiter: 0, now: now) == "execute")
    }
}

extension DedupeKey {
    fileprivate func with(requestID: String) -> DedupeKey { DedupeKey(client: client, requestID: requestID) }
}

import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// Which of its own claims a dedupe store may take for one whose reply was lost: only a claim in
/// doubt, once, and never one that ran here.
@Suite("Claims in doubt: a lost claim is recognized once, a claim that ran never", .sharedMachine)
struct ClaimsInDoubtTests {
    let now = ContinuousClock.now

    @Test func aLostClaimIsRecognizedOnceWithinItsTerm() {
        var doubts = ClaimsInDoubt()
        // Never failed here: the instance's value is a claim that succeeded, not a lost one.
        let recognized1 = doubts.recognize("e", at: now)
        #expect(!recognized1)
        doubts.claimFailed("e", term: .seconds(15), at: now)
        let recognized2 = doubts.recognize("e", at: now + .seconds(1))
        #expect(recognized2)
        // A second copy asking again finds the claim the first recognition ran.
        let recognized3 = doubts.recognize("e", at: now + .seconds(1))
        #expect(!recognized3)
        #expect(doubts.count == 0)
        // After its term the lost claim has expired in Redis: what holds the value is another claim.
        doubts.claimFailed("f", term: .seconds(15), at: now)
        let recognized4 = doubts.recognize("f", at: now + .seconds(15))
        #expect(!recognized4)
    }

    @Test func anAnswerEndsTheDoubt() {
        var doubts = ClaimsInDoubt()
        doubts.claimFailed("e", term: .seconds(15), at: now)
        // Redis answered a later claim with another server's value, a reply, or a fresh claim.
        doubts.answered("e")
        let recognized5 = doubts.recognize("e", at: now)
        #expect(!recognized5)
    }

    @Test func aClaimThatRanHereIsNeverTakenForALostOne() {
        var doubts = ClaimsInDoubt()
        // The request ran; its reply could not be stored (the value stays for the claim's term), and
        // a later copy's claim lost its reply too.
        doubts.settling("e", term: .seconds(15), at: now)
        doubts.claimFailed("e", term: .seconds(15), at: now + .seconds(1))
        let recognized6 = doubts.recognize("e", at: now + .seconds(2))
        #expect(!recognized6)
        // Once the term has passed, the value in Redis can only be a lost claim's.
        doubts.claimFailed("e", term: .seconds(15), at: now + .seconds(16))
        let recognized7 = doubts.recognize("e", at: now + .seconds(17))
        #expect(recognized7)
        // A reply stored ends the settling at once.
        doubts.settling("g", term: .seconds(15), at: now)
        doubts.settled("g")
        doubts.claimFailed("g", term: .seconds(15), at: now)
        let recognized8 = doubts.recognize("g", at: now)
        #expect(recognized8)
    }

    @Test func atTheBoundADoubtIsNotKeptAndASettlingEntryStopsEveryRecognition() {
        var doubts = ClaimsInDoubt(capacity: 2)
        doubts.claimFailed("a", term: .seconds(10), at: now)
        doubts.claimFailed("b", term: .seconds(20), at: now)
        // Full: a third doubt is dropped (its claim will be waited for as another's).
        doubts.claimFailed("c", term: .seconds(10), at: now)
        #expect(doubts.count == 2)
        let recognized9 = doubts.recognize("c", at: now)
        #expect(!recognized9)
        // A settling entry finding no room refuses every recognition until its term ends.
        doubts.settling("d", term: .seconds(30), at: now)
        #expect(doubts.count == 2)
        let recognized10 = doubts.recognize("b", at: now + .seconds(1))
        #expect(!recognized10)
        // Expired records make room again.
        doubts.claimFailed("e", term: .seconds(60), at: now + .seconds(31))
        let recognized11 = doubts.recognize("e", at: now + .seconds(32))
        #expect(recognized11)
    }
}

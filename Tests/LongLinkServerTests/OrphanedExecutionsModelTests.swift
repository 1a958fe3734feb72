import LongLinkTestSupport
import Testing

@testable import LongLinkServer

/// The orphan table's bounds, driven directly.
@Suite("Orphaned executions model", .sharedMachine)
struct OrphanedExecutionsModelTests {
    @Test func boundsPerClientAndInAll() {
        var orphans = OrphanedExecutions<Int, String>(maxPerClient: 2, maxTotal: 3)
        func adopt(_ key: Int, client: String, handle: String) -> Bool {
            orphans.adopt(key, client: client, handle: handle)
        }
        #expect(adopt(1, client: "a", handle: "a1"))
        #expect(adopt(2, client: "a", handle: "a2"))
        #expect(!adopt(3, client: "a", handle: "a3"))
        #expect(adopt(4, client: "b", handle: "b1"))
        // The total is reached: another client is refused too.
        #expect(!adopt(5, client: "c", handle: "c1"))
        #expect(orphans.count == 3)
        #expect(orphans.count(of: "a") == 2)

        // A finished orphan frees its client's share; an unknown key changes nothing.
        let removed = orphans.remove(1)
        let again = orphans.remove(1)
        #expect(removed == "a1")
        #expect(again == nil)
        #expect(orphans.count(of: "a") == 1)
        #expect(adopt(3, client: "a", handle: "a3"))
        let all = orphans.removeAll()
        #expect(Set(all) == ["a2", "a3", "b1"])
        #expect(orphans.count == 0)
        #expect(orphans.count(of: "a") == 0)
    }

    @Test func zeroKeepsNone() {
        var orphans = OrphanedExecutions<Int, String>(maxPerClient: 0, maxTotal: 10)
        let adopted = orphans.adopt(1, client: "a", handle: "a1")
        #expect(!adopted)
        #expect(orphans.count == 0)
    }
}

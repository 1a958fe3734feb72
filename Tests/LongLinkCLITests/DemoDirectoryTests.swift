import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import longlink

/// The demo's directory as a plain value: who holds what, and what is forgotten when.
@Suite("Demo directory", .sharedMachine)
struct DemoDirectoryTests {
    @Test func aMembershipHeldByTwoConnectionsStaysUntilBothAreGone() throws {
        var directory = DemoDirectory()
        #expect(try directory.enter(room: 1, user: "alice", connection: 10) == ["alice"])
        // Her tablet, or the same client's second link during a migration.
        #expect(try directory.enter(room: 1, user: "alice", connection: 11) == ["alice"])
        #expect(try directory.enter(room: 1, user: "alice", connection: 11) == ["alice"])  // again: nothing new
        #expect(directory.bytes == 5)
        directory.connectionClosed(10)
        #expect(directory.members(ofRoom: 1) == ["alice"])
        // Leaving a membership another connection made does nothing.
        #expect(directory.leave(room: 1, user: "alice", connection: 12) == nil)
        #expect(directory.members(ofRoom: 1) == ["alice"])
        directory.connectionClosed(11)
        #expect(directory.members(ofRoom: 1) == nil)
        #expect(directory.roomCount == 0 && directory.bytes == 0 && directory.holderCount == 0)
        directory.connectionClosed(11)  // twice: nothing
    }

    @Test func aLoginOfAnotherUserReleasesThePreviousOne() throws {
        var directory = DemoDirectory()
        try directory.login("alice", connection: 1)
        try directory.login("alice", connection: 2)
        try directory.login("bob", connection: 1)
        #expect(directory.loggedIn == ["alice", "bob"])
        try directory.login("carol", connection: 2)
        #expect(directory.loggedIn == ["bob", "carol"])
        #expect(directory.bytes == 8)
        directory.connectionClosed(1)
        directory.connectionClosed(2)
        #expect(directory.userCount == 0 && directory.bytes == 0)
    }

    @Test func aWatchListIsKeptWhileAConnectionThatSetItOrLoggedInIsOpen() throws {
        var directory = DemoDirectory()
        try directory.login("dave", connection: 1)
        try directory.watch(["AAPL", "MSFT"], principal: "dave", connection: 1)
        try directory.watch(["TSLA"], principal: "dave", connection: 2)
        #expect(directory.watchLists.map(\.symbols) == [["TSLA"]])
        #expect(directory.bytes == 4 + 4)
        directory.connectionClosed(1)
        // Not logged in anywhere: not fed, but still held by the connection that set it.
        #expect(directory.watchLists.isEmpty && directory.userCount == 1)
        directory.connectionClosed(2)
        #expect(directory.userCount == 0 && directory.bytes == 0)
    }

    @Test func aRefusalChangesNothing() throws {
        var limits = DemoDirectory.Limits()
        limits.maxMembershipsPerConnection = 2
        limits.maxMemberships = 3
        limits.maxBytes = 20
        var directory = DemoDirectory(limits: limits)
        _ = try directory.enter(room: 1, user: "a", connection: 1)
        _ = try directory.enter(room: 2, user: "a", connection: 1)
        #expect(throws: LongLinkError.self) { try directory.enter(room: 3, user: "a", connection: 1) }
        _ = try directory.enter(room: 3, user: "b", connection: 2)
        #expect(throws: LongLinkError.self) { try directory.enter(room: 4, user: "c", connection: 3) }
        #expect(throws: LongLinkError.self) {
            try directory.watch([String(repeating: "s", count: 20)], principal: "d", connection: 3)
        }
        #expect(throws: LongLinkError.self) { try directory.enter(room: 1, user: "", connection: 3) }
        #expect(directory.roomCount == 3 && directory.userCount == 0 && directory.bytes == 3)
        // Entering a room another connection holds for the same user costs no membership.
        #expect(try directory.enter(room: 1, user: "a", connection: 3) == ["a"])
    }
}

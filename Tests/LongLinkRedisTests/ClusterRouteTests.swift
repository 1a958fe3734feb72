import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// The routing decisions, without sockets: where a command goes, what each cluster reply means.
@Suite(.sharedMachine) struct ClusterRouteTests {
    static let topology: ClusterTopology = {
        var parser = RESPParser()
        parser.append(ClusterTopologyTests.reply(resp3: true, ClusterTopologyTests.threePrimaries))
        return try! ClusterTopology(shardsReply: try! parser.next()!)
    }()
    static let start = ContinuousClock.now
    static func node(_ port: Int) -> ClusterTopology.Address { .init(host: "127.0.0.1", port: port) }
    static func error(_ text: String) -> RESPValue { .simpleError(Array(text.utf8)) }
    static func get(_ key: String) -> RedisCommand { RedisCommand("GET", key).keyed(1..<2) }

    func route(_ command: RedisCommand, timeout: Duration = .seconds(2)) throws -> ClusterRoute {
        try ClusterRoute(command, deadline: Self.start + timeout)
    }

    @Test func commandsGoToTheirSlotsPrimary() throws {
        // "foo" is slot 12182 (third primary), "bar" 5061 (first), "hello" 866 (first).
        #expect(try route(Self.get("foo")).target(in: Self.topology) == .node(Self.node(17003), asking: false))
        #expect(try route(Self.get("bar")).target(in: Self.topology) == .node(Self.node(17001), asking: false))
        let script = RedisScript("return 1").evalSHA(keys: [Array("{bar}:x".utf8)], arguments: [Array("foo".utf8)])
        #expect(try route(script).slot == 5061)
        // Without keys: any primary.
        #expect(try route(RedisCommand("PING")).slot == nil)
        if case .unserved = try route(RedisCommand("PING")).target(in: Self.topology) { Issue.record("unserved") }
    }

    @Test func keysInSeveralSlotsAreRefused() throws {
        do throws(LongLinkError) {
            _ = try ClusterRoute(RedisCommand("MGET", "foo", "bar").keyed(1..<3), deadline: Self.start)
            Issue.record("a cross-slot command was routed")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        #expect(try route(RedisCommand("MGET", "{bar}1", "{bar}2").keyed(1..<3)).slot == 5061)
    }

    @Test func movedGoesToTheNewOwnerAndSaysSo() throws {
        var route = try route(Self.get("foo"))
        let action = route.received(Self.error("MOVED 12182 127.0.0.1:17001"), from: Self.node(17003), at: Self.start)
        guard case .moved(12182, let address) = action else { Issue.record("\(action)"); return }
        #expect(address == Self.node(17001))
        #expect(route.target(in: Self.topology) == .node(Self.node(17001), asking: false))
        // A value ends the redirection: the next command follows the map again.
        #expect(isDeliver(route.received(.simpleString(Array("OK".utf8)), from: Self.node(17001), at: Self.start)))
        #expect(route.target(in: Self.topology) == .node(Self.node(17003), asking: false))
    }

    @Test func askGoesOnceWithAskingAndLeavesTheMap() throws {
        var route = try route(Self.get("foo"))
        let action = route.received(Self.error("ASK 12182 :17002"), from: Self.node(17003), at: Self.start)
        guard case .resend = action else { Issue.record("\(action)"); return }
        // An empty host is the node that answered.
        #expect(route.target(in: Self.topology) == .node(Self.node(17002), asking: true))
        #expect(isDeliver(route.received(.null, from: Self.node(17002), at: Self.start)))
        #expect(route.target(in: Self.topology) == .node(Self.node(17003), asking: false))
    }

    /// Nodes that keep redirecting the command (a slot's old and new owner, one not yet told)
    /// make it wait and reload the map after five redirections in a row, until the deadline.
    @Test func redirectionsInARowWaitThenFailAtTheDeadline() throws {
        var route = try route(Self.get("foo"), timeout: .milliseconds(25))
        var now = Self.start
        for round in 0..<2 {
            for _ in 0..<ClusterRoute.maximumRedirections {
                guard case .moved = route.received(Self.error("MOVED 1 h:1"), from: Self.node(1), at: now) else {
                    Issue.record("stopped early in round \(round)")
                    return
                }
            }
            let next = route.received(Self.error("ASK 1 h:1"), from: Self.node(1), at: now)
            if round == 0 {
                guard case .refreshAfter(let delay) = next else { Issue.record("\(next)"); return }
                #expect(delay == .milliseconds(10))
                now += delay
            } else {
                // The next wait (20 ms) would pass the deadline.
                guard case .fail(let error) = next else { Issue.record("\(next)"); return }
                #expect(error.code == .unavailable)
            }
        }
    }

    @Test func tryAgainAndClusterDownWaitWithinTheDeadlineThenFailUnavailable() throws {
        for reply in ["TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down"] {
            var route = try route(Self.get("foo"), timeout: .milliseconds(100))
            var now = Self.start
            var waited: [Duration] = []
            while case .refreshAfter(let delay) = route.received(Self.error(reply), from: Self.node(17003), at: now) {
                waited.append(delay)
                now += delay
            }
            #expect(waited == [.milliseconds(10), .milliseconds(20), .milliseconds(40)], "\(reply)")
            let last = route.received(Self.error(reply), from: Self.node(17003), at: now)
            guard case .fail(let error) = last else { Issue.record("\(last)"); continue }
            #expect(error.code == .unavailable, "\(reply)")
        }
    }

    @Test func anUnservedSlotWaitsThenFailsUnavailable() throws {
        var route = try route(Self.get("foo"), timeout: .milliseconds(25))
        guard case .refreshAfter(.milliseconds(10)) = route.unserved(at: Self.start) else {
            Issue.record("no wait"); return
        }
        let last = route.unserved(at: Self.start + .milliseconds(10))
        guard case .fail(let error) = last else { Issue.record("\(last)"); return }
        #expect(error.code == .unavailable)
    }

    @Test func otherErrorsAndMalformedRedirectionsAreTheCallers() throws {
        var route = try route(Self.get("foo"))
        #expect(
            isDeliver(route.received(Self.error("NOSCRIPT No matching script"), from: Self.node(1), at: Self.start)))
        #expect(isDeliver(route.received(Self.error("ERR wrong type"), from: Self.node(1), at: Self.start)))
        for bad in ["MOVED", "MOVED x 127.0.0.1:1", "MOVED 16384 h:1", "ASK 1 h", "ASK 1 h:0", "MOVED 1 h:99999"] {
            let action = route.received(Self.error(bad), from: Self.node(1), at: Self.start)
            guard case .fail(let error) = action else { Issue.record("\(bad): \(action)"); continue }
            #expect(error.code == .internalError, "\(bad)")
        }
        #expect(ClusterRoute.address("::1:7000", default: "x") == .init(host: "::1", port: 7000))
    }

    private func isDeliver(_ action: ClusterRoute.Action) -> Bool {
        if case .deliver = action { return true }
        return false
    }
}

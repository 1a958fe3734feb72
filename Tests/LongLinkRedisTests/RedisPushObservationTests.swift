import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// Cross-server delivery: a ``RedisPushStore`` observing principals hears pushes that another
/// store (another server) stored, subscribes and unsubscribes as the observer's answer changes,
/// and reports lost notices after its pub/sub connection comes back.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisPushObservationTests {
    /// What a server would hand the store: the principals it holds, and mailboxes for the reports.
    final class Server: Sendable {
        let watched = Shared<Set<String>>([])
        let stored = Mailbox<String>()
        let lost = Mailbox<Int>()

        var observer: PushStoreObserver {
            PushStoreObserver(
                isWatching: { [watched] principal in watched.withLock { $0.contains(principal) } },
                pushStored: { [stored] principal in stored.put(principal) },
                noticesLost: { [lost] in lost.put(0) })
        }

        func watch(_ principal: String, _ watching: Bool = true) {
            watched.withLock { set in
                if watching { set.insert(principal) } else { set.remove(principal) }
            }
        }
    }

    @Test func aPushStoredOnAnotherServerIsReportedWhileWatched() async throws {
        try await withRedisServer { redis in
            let storeA = try RedisPushStore(configuration: redis.configuration)
            let storeB = try RedisPushStore(configuration: redis.configuration)
            let serverA = Server()
            await storeA.startObserving(serverA.observer)
            // The first connection reports lost notices too: the server reads everything then.
            _ = try await serverA.lost.next(within: .seconds(5), "the first noticesLost")

            serverA.watch("p")
            await storeA.refreshObservation(of: "p")
            // Confirmed by Redis before refreshObservation returned: no waiting.
            #expect(try await storeB.client.numberOfSubscribers(storeA.channel(for: "p")) == 1)
            _ = try await storeB.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            #expect(try await serverA.stored.next(within: .seconds(5)) == "p")
            // An unwatched principal is not heard; the push for p after it is (one connection keeps order).
            _ = try await storeB.append(PushAppend(principal: "q", topic: "t", payload: [1]))
            _ = try await storeB.append(PushAppend(principal: "p", topic: "t", payload: [2]))
            #expect(try await serverA.stored.next(within: .seconds(5)) == "p")

            serverA.watch("p", false)
            await storeA.refreshObservation(of: "p")
            #expect(try await storeB.client.numberOfSubscribers(storeA.channel(for: "p")) == 0)
            _ = try await storeB.append(PushAppend(principal: "p", topic: "t", payload: [3]))
            // A fence: r's notice comes after any p's would have.
            serverA.watch("r")
            await storeA.refreshObservation(of: "r")
            _ = try await storeB.append(PushAppend(principal: "r", topic: "t", payload: [1]))
            #expect(try await serverA.stored.next(within: .seconds(5)) == "r")
            #expect(serverA.stored.count == 0)
            #expect(serverA.lost.count == 0)

            await storeA.shutdown()
            await storeB.shutdown()
        }
    }

    @Test func principalsComingAndGoingLeaveNoSubscriptions() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let server = Server()
            await store.startObserving(server.observer)
            let principals = (0..<200).map { "user\($0)" }
            for principal in principals { server.watch(principal) }
            await withTaskGroup(of: Void.self) { group in
                for principal in principals { group.addTask { await store.refreshObservation(of: principal) } }
            }
            let channels = try await store.client.run(RedisCommand("PUBSUB", "NUMSUB") + principals.map(store.channel))
            #expect(channels.elements?.count == 400)
            #expect(
                channels.elements?.enumerated().allSatisfy { $0.offset % 2 == 0 || $0.element == .integer(1) } == true)
            for principal in principals { server.watch(principal, false) }
            await withTaskGroup(of: Void.self) { group in
                for principal in principals { group.addTask { await store.refreshObservation(of: principal) } }
            }
            #expect(try await store.client.run(RedisCommand("PUBSUB", "CHANNELS")).elements == [])
            await store.shutdown()
        }
    }

    @Test func subscriptionsSurviveARestartAndLostNoticesAreReported() async throws {
        try await withRedisServer { redis in
            let storeA = try RedisPushStore(configuration: redis.configuration)
            let storeB = try RedisPushStore(configuration: redis.configuration)
            let serverA = Server()
            await storeA.startObserving(serverA.observer)
            _ = try await serverA.lost.next(within: .seconds(5), "the first noticesLost")
            serverA.watch("p")
            await storeA.refreshObservation(of: "p")

            try await redis.restartWithoutPersistence()
            _ = try await serverA.lost.next(within: .seconds(10), "noticesLost after the restart")
            // noticesLost comes once every subscription is confirmed again.
            var subscribers: Int64?
            try await eventually("the command connection is back", within: .seconds(10)) {
                subscribers = try? await storeB.client.numberOfSubscribers(storeA.channel(for: "p"))
                return subscribers != nil
            }
            #expect(subscribers == 1)
            _ = try await storeB.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            #expect(try await serverA.stored.next(within: .seconds(5)) == "p")

            await storeA.shutdown()
            await storeB.shutdown()
        }
    }
}

extension RedisCommand {
    /// The command with text arguments added.
    static func + (command: RedisCommand, arguments: [String]) -> RedisCommand {
        RedisCommand(command.arguments + arguments.map { Array($0.utf8) })
    }
}

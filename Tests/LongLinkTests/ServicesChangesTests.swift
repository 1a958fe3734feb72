import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLink

/// Services added and removed while `run()` runs, against real servers on loopback.
@Suite("Services added and removed", .sharedMachine, .serialized)
struct ServicesChangesTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// Removes a service, within a bound (a removal waits for the client to stop); the removed
    /// client must have stopped by then.
    @discardableResult
    private func remove(_ name: ServiceName, from services: LongLinkServices, gracePeriod: Duration? = nil)
        async throws -> LongLinkClient
    {
        let removed = try await within(.seconds(20), "'\(name)' to be removed") {
            if let gracePeriod {
                try await services.remove(name, gracePeriod: gracePeriod)
            } else {
                try await services.remove(name)
            }
        }
        #expect(await removed.connectionState.phase == .stopped)
        return removed
    }

    /// A service added while the others run starts at once and answers; the one already there keeps
    /// its link. A name in use and a configuration that is not valid are refused, typed.
    @Test func aServiceAddedWhileRunningAnswersAtOnce() async throws {
        let fleet = try await Fleet.start(2)
        try await withLongLinkServices(["quotes": .forFleet([fleet.endpoints[0]])]) { services in
            let quotes = try services.client("quotes")
            #expect(text(try await quotes.request("server")) == "s0")
            let chat = try services.add("chat", configuration: .forFleet([fleet.endpoints[1]]))
            #expect(services.names == ["chat", "quotes"])
            #expect(text(try await chat.request("server")) == "s1")
            #expect(try services.client("chat") === chat)
            let taken = #expect(throws: LongLinkError.self) {
                try services.add("chat", configuration: .forFleet([fleet.endpoints[0]]))
            }
            #expect(taken?.code == .alreadyExists && taken?.message.contains("chat") == true)
            let invalid = #expect(throws: LongLinkError.self) {
                try services.add("trade", configuration: .forFleet([]))
            }
            #expect(invalid?.code == .invalidConfiguration)
            #expect(services.names == ["chat", "quotes"])
            #expect(try services.client("chat") === chat)
            #expect(text(try await quotes.request("server")) == "s0")
            #expect(await quotes.statistics.connects == 1)
        }
        await fleet.stop()
    }

    /// 300 requests wait on the service that stays (its server holds them) while another service
    /// is removed with 20 requests in flight, and a caller keeps calling the staying service one
    /// request after another throughout: the removed service drains (its 20 are answered), and
    /// every request of the staying service is answered, each run once.
    @Test func removingAServiceUnderLoadLosesNoRequestOfTheOthers() async throws {
        let gate = Mailbox<Void>()
        let held = LongLinkTestServer.holding(until: gate)
        try await held.start()
        let fleet = try await Fleet.start(1)
        try await withLongLinkServices([
            "quotes": .forFleet(fleet.endpoints), "chat": .forFleet([try held.endpoint]),
        ]) { services in
            let chat = try services.client("chat")
            let quotes = try services.client("quotes")
            let options = RequestOptions(timeout: .seconds(60))
            let load = (0..<300).map { index in
                Task { text(try await chat.request("hold", payload: bytes("h\(index)"), options: options)) }
            }
            let draining = (0..<20).map { index in
                Task { text(try await quotes.request("work", payload: bytes("q\(index)"), options: options)) }
            }
            try await eventually("the load is in flight") {
                let (chatStatistics, quotesStatistics) = (await chat.statistics, await quotes.statistics)
                return chatStatistics.inFlight == 300 && quotesStatistics.inFlight == 20
            }
            let caller = Task {
                var answers = 0
                while true {
                    let payload = "c\(answers)"
                    let reply: [UInt8]
                    do {
                        reply = try await chat.request("echo", payload: bytes(payload), options: options)
                    } catch is CancellationError {
                        return answers
                    }
                    guard text(reply) == payload else { throw LongLinkError(code: .unknown, message: "wrong answer") }
                    answers += 1
                }
            }
            try await remove("quotes", from: services)
            #expect(services.names == ["chat"])
            for call in draining { #expect(try await call.value == "s0") }
            #expect(fleet.runs.count == 20 && fleet.runs.values.allSatisfy { $0 == 1 })
            let statistics = await chat.statistics
            #expect(statistics.inFlight >= 300 && statistics.inFlight <= 301)
            for _ in 0..<300 { gate.put(()) }
            for (index, call) in load.enumerated() { #expect(try await call.value == "h\(index)") }
            caller.cancel()
            #expect(try await caller.value > 0)
            #expect(await chat.statistics.connects == 1)
        }
        await held.stop()
        await fleet.stop()
    }

    /// A removed service's name is unknown at once; a caller still holding its client gets
    /// `shutdown`, its push streams end, and removing an unknown name is `notFound`.
    @Test func aRemovedServiceFailsTyped() async throws {
        let fleet = try await Fleet.start(1)
        try await withLongLinkServices(["quotes": .forFleet(fleet.endpoints), "chat": .forFleet(fleet.endpoints)]) {
            services in
            let quotes = try services.client("quotes")
            #expect(text(try await quotes.request("server")) == "s0")
            let pushes = quotes.pushes(topic: "alerts")
            let states = quotes.connectionStates
            try await remove("quotes", from: services)
            #expect(services["quotes"] == nil && services.clients.keys.sorted() == ["chat"])
            let unknown = #expect(throws: LongLinkError.self) { try services.client("quotes") }
            #expect(unknown?.code == .notFound && unknown?.message.contains("quotes") == true)
            let stopped = await #expect(throws: LongLinkError.self) { try await quotes.request("server") }
            #expect(stopped?.code == .shutdown)
            try await within(.seconds(10), "the removed service's streams to end") {
                for await _ in pushes {}
                for await _ in states {}
            }
            let missing = await #expect(throws: LongLinkError.self) {
                try await within(.seconds(20), "a second removal") { try await services.remove("quotes") }
            }
            #expect(missing?.code == .notFound)
            #expect(text(try await services.client("chat").request("server")) == "s0")
        }
        await fleet.stop()
    }

    /// A removal waits for the drain; cancelling the task that removes fails what is in flight at
    /// once and returns.
    @Test func cancellingARemovalCutsTheDrainShort() async throws {
        let gate = Mailbox<Void>()
        let held = LongLinkTestServer.holding(until: gate)
        try await held.start()
        try await withLongLinkServices(["quotes": .forFleet([try held.endpoint])]) { services in
            let quotes = try services.client("quotes")
            let call = Task { try await quotes.request("hold", options: RequestOptions(timeout: .seconds(60))) }
            try await eventually("the call to be in flight") { await quotes.statistics.inFlight == 1 }
            let removal = Task { try await services.remove("quotes", gracePeriod: .seconds(60)) }
            try await eventually("the removal to begin") { services["quotes"] == nil }
            removal.cancel()
            let error = await #expect(throws: LongLinkError.self) {
                try await within(.seconds(10), "the call to end") { try await call.value }
            }
            #expect(error?.code == .shutdown)
            _ = try await within(.seconds(10), "the cancelled removal to return") { try await removal.value }
        }
        gate.put(())
        await held.stop()
    }

    /// A name removed can be added again, with other servers; the new client is the one found.
    @Test func aRemovedNameCanBeAddedAgain() async throws {
        let fleet = try await Fleet.start(2)
        try await withLongLinkServices(["quotes": .forFleet([fleet.endpoints[0]])]) { services in
            let old = try services.client("quotes")
            #expect(text(try await old.request("server")) == "s0")
            try await remove("quotes", from: services)
            let new = try services.add("quotes", configuration: .forFleet([fleet.endpoints[1]]))
            #expect(try services.client("quotes") === new && new !== old)
            #expect(text(try await services.client("quotes").request("server")) == "s1")
            try await remove("quotes", from: services, gracePeriod: .zero)
            try services.add("quotes", configuration: .forFleet([fleet.endpoints[0]]))
            #expect(text(try await services.client("quotes").request("server")) == "s0")
        }
        await fleet.stop()
    }

    private enum Outcome: Sendable {
        case added(ServiceName, LongLinkClient)
        case answered
        case removed(ServiceName)
    }

    /// 16 tasks add and remove the same four names at once, 8 times each (half of them leave their
    /// last name in), calling what they added: every add either succeeds or finds the name taken,
    /// every remove either succeeds or finds it gone and returns once the client has stopped, the
    /// set ends as the successes say, and after shutdown every client that was added has stopped.
    @Test func addsAndRemovesRacingFromManyTasksEndConsistent() async throws {
        let fleet = try await Fleet.start(1)
        let services = LongLinkServices([:])
        let running = Task { try await services.run() }
        let names: [ServiceName] = ["a", "b", "c", "d"]
        let options = RequestOptions(timeout: .seconds(5))
        let outcomes = try await within(.seconds(60), "the adds and removes") {
            try await withThrowingTaskGroup(of: [Outcome].self) { group in
                for task in 0..<16 {
                    group.addTask {
                        var outcomes: [Outcome] = []
                        for round in 0..<8 {
                            let name = names[(task + round) % names.count]
                            do throws(LongLinkError) {
                                let client = try services.add(name, configuration: .forFleet(fleet.endpoints))
                                outcomes.append(.added(name, client))
                                // Another task may remove it meanwhile: then this fails `shutdown`.
                                if (try? await client.request("server", options: options)) != nil {
                                    outcomes.append(.answered)
                                }
                            } catch {
                                #expect(error.code == .alreadyExists)
                            }
                            if round == 7 && task.isMultiple(of: 2) { break }
                            do throws(LongLinkError) {
                                let removed = try await services.remove(name, gracePeriod: .milliseconds(100))
                                outcomes.append(.removed(name))
                                #expect(await removed.connectionState.phase == .stopped)
                            } catch {
                                #expect(error.code == .notFound)
                            }
                        }
                        return outcomes
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        var counts: [ServiceName: Int] = [:]
        var added: [LongLinkClient] = []
        for outcome in outcomes {
            switch outcome {
            case .added(let name, let client):
                counts[name, default: 0] += 1
                added.append(client)
            case .removed(let name): counts[name, default: 0] -= 1
            case .answered: break
            }
        }
        #expect(counts.values.allSatisfy { $0 == 0 || $0 == 1 })
        #expect(Set(services.names) == Set(counts.filter { $0.value == 1 }.keys))
        #expect(services.table.withLock { $0.leavingCount } == 0)
        #expect(outcomes.contains { if case .answered = $0 { true } else { false } })
        services.shutdown(gracePeriod: .zero)
        try await within(.seconds(30), "run() to return") { try await running.value }
        for client in added {
            let states = client.connectionStates
            try await within(.seconds(10), "every added client to stop") { for await _ in states {} }
            let error = await #expect(throws: LongLinkError.self) { try await client.request("server") }
            #expect(error?.code == .shutdown)
        }
        let late = #expect(throws: LongLinkError.self) {
            try services.add("e", configuration: .forFleet(fleet.endpoints))
        }
        #expect(late?.code == .shutdown)
        await fleet.stop()
    }
}

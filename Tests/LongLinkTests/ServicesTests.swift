import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

extension ServiceName {
    fileprivate static let quotes: ServiceName = "quotes"
    fileprivate static let chat: ServiceName = "chat"
}

extension LongLinkServices {
    /// The typed access the docs show.
    fileprivate var quotes: LongLinkClient { get throws { try client(.quotes) } }
    fileprivate var chat: LongLinkClient { get throws { try client(.chat) } }
}

/// Several named services under one `run()`, against real servers.
@Suite("Services", .sharedMachine, .serialized)
struct ServicesTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func eachServiceTalksToItsOwnServersAndIsFoundByName() async throws {
        let fleet = try await Fleet.start(2)
        try await withLongLinkServices([
            .quotes: .forFleet([fleet.endpoints[0]]), .chat: .forFleet([fleet.endpoints[1]]),
        ]) { services in
            #expect(services.names == [.chat, .quotes])
            #expect(text(try await services.quotes.request("server")) == "s0")
            #expect(text(try await services.chat.request("server")) == "s1")
            #expect(services["trade"] == nil)
            do {
                _ = try services.client("trade")
                Issue.record("expected notFound")
            } catch let error as LongLinkError {
                #expect(error.code == .notFound && error.message.contains("trade"))
            }
        }
        await fleet.stop()
    }

    /// A service's endpoints change at run time while requests (each taking 250 ms) start every
    /// 0.1 s: it moves to the new server make before break, the requests in flight on the old one
    /// are answered there, every request runs exactly once, and the other service never notices.
    @Test func changingAServicesEndpointsAtRunTimeLosesNoRequest() async throws {
        let fleet = try await Fleet.start(3)
        try await withLongLinkServices([
            .quotes: .forFleet([fleet.endpoints[0]]), .chat: .forFleet([fleet.endpoints[2]]),
        ]) { services in
            let quotes = try services.quotes
            #expect(text(try await quotes.request("server")) == "s0")
            let results = Mailbox<Result<String, any Error>>()
            let loop = Task {
                for index in 0..<30 {
                    let payload = bytes("m\(index)")
                    Task {
                        do {
                            results.put(
                                .success(
                                    String(decoding: try await quotes.request("work", payload: payload), as: UTF8.self))
                            )
                        } catch {
                            results.put(.failure(error))
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            var served: [String] = []
            for _ in 0..<10 { served.append(try await results.next().get()) }
            try await services.setEndpoints([fleet.endpoints[1]], for: .quotes)
            for _ in 10..<30 { served.append(try await results.next().get()) }
            await loop.value
            #expect(served.count == 30)
            #expect(served.last == "s1")
            // Answered by the old server after the move began: it finished what it had.
            #expect(served.filter { $0 == "s0" }.count > 10)
            #expect(fleet.runs.count == 30 && fleet.runs.values.allSatisfy { $0 == 1 })
            #expect(await quotes.statistics.migrations == 1)
            #expect(text(try await services.chat.request("server")) == "s2")
            #expect(try await services.chat.statistics.connects == 1)
        }
        await fleet.stop()
    }

    /// 500 requests wait on a service whose server holds every one; the other service's requests
    /// are answered meanwhile, one after the other, as if nothing happened.
    @Test func aFloodOnOneServiceNeverDelaysAnother() async throws {
        let gate = Mailbox<Void>()
        let held = LongLinkTestServer.holding(until: gate)
        try await held.start()
        let fleet = try await Fleet.start(1)
        var flooded = ClientConfiguration.forFleet([try held.endpoint])
        flooded.offlineQueueLimit = 10_000
        try await withLongLinkServices([.quotes: flooded, .chat: .forFleet(fleet.endpoints)]) { services in
            let quotes = try services.quotes
            let calls = (0..<500).map { _ in
                Task { try await quotes.request("hold", options: RequestOptions(timeout: .seconds(60))) }
            }
            try await eventually("the flood is waiting") {
                let statistics = await quotes.statistics
                return statistics.inFlight + statistics.queued == 500
            }
            let chat = try services.chat
            for index in 0..<20 {
                #expect(
                    text(
                        try await chat.request(
                            "run", payload: bytes("c\(index)"), options: RequestOptions(timeout: .seconds(5)))) == "s0")
            }
            let statistics = await quotes.statistics
            #expect(statistics.inFlight + statistics.queued == 500)
            for _ in 0..<500 { gate.put(()) }
            for call in calls { _ = try await call.value }
        }
        await held.stop()
        await fleet.stop()
    }

    /// A service whose login is rejected stops for good; the other goes on, and `run()` names the
    /// failed service once everything has stopped.
    @Test func aServiceThatStopsForGoodDoesNotStopTheOthers() async throws {
        let fleet = try await Fleet.start(1)
        var rejected = ClientConfiguration.forFleet(fleet.endpoints)
        rejected.login = { _ in throw LongLinkError(code: .unauthenticated, message: "bad token") }
        let services = LongLinkServices([.quotes: rejected, .chat: .forFleet(fleet.endpoints)])
        let running = Task { try await services.run() }
        let states = try services.quotes.connectionStates
        try await within(.seconds(20), "quotes to stop") {
            for await state in states where state.phase == .stopped { return }
        }
        #expect(text(try await services.chat.request("server")) == "s0")
        services.shutdown()
        do {
            try await running.value
            Issue.record("expected the rejected login")
        } catch let error as LongLinkError {
            #expect(error.code == .unauthenticated)
            #expect(error.message.hasPrefix("service 'quotes': "))
        }
        await fleet.stop()
    }
}

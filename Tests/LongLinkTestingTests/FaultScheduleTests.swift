import LongLinkCore
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@Suite("FaultSchedule", .sharedMachine)
struct FaultScheduleTests {
    @Test("the timeline expands timed faults and orders by offset")
    func timeline() {
        let schedule: FaultSchedule = [
            .at(.seconds(5), .cut),
            .at(.seconds(1), .blackHole(.both, for: .seconds(2))),
            .at(.seconds(3), .blackHole(.upstream)),
        ]
        let timeline = schedule.timeline
        #expect(timeline.map(\.offset) == [.seconds(1), .seconds(3), .seconds(3), .seconds(5)])
        #expect(timeline.map(\.fault) == [.blackHole(.both), .restoreForwarding(.both), .blackHole(.upstream), .cut])
        #expect(timeline.map(\.isReversal) == [false, true, false, false])
    }

    @Test("runs its faults in order against a proxy and reports each, with an injected sleep")
    func runsInOrder() async throws {
        try await withEchoProxy { _, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            try await roundTrip(client, "hi", expecting: "hi")

            let slept = Locked<[Duration]>([])
            let reported = Locked<[FaultSchedule.Record]>([])
            let schedule: FaultSchedule = [
                .at(.zero, .latency(.milliseconds(5))),
                .at(.seconds(2), .cut),
                .at(.seconds(1), .blackHole(.both, for: .seconds(3))),
            ]
            let log = try await within(.seconds(10), "the schedule") {
                await schedule.run(on: proxy, sleep: { duration in slept.withLock { $0.append(duration) } }) {
                    record in reported.withLock { $0.append(record) }
                }
            }
            let expected: [NetworkFault] = [
                .latency(.milliseconds(5)), .blackHole(.both), .cut, .restoreForwarding(.both),
            ]
            #expect(log.map(\.fault) == expected)
            #expect(log.map(\.offset) == [.zero, .seconds(1), .seconds(2), .seconds(4)])
            #expect(log.map(\.isReversal) == [false, false, false, true])
            #expect(reported.withLock { $0 } == log)
            #expect(slept.withLock { $0 } == [.seconds(1), .seconds(1), .seconds(2)])
            #expect(proxy.statistics.faultsApplied == 4)
            #expect(try await client.waitForClose() == nil)
        }
    }

    @Test("with the real clock, a fault is applied no earlier than its offset")
    func realClock() async throws {
        try await withEchoProxy { _, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            try await roundTrip(client, "hi", expecting: "hi")
            let start = ContinuousClock.now
            let log = try await within(.seconds(10), "the schedule") {
                await FaultSchedule([.at(.milliseconds(50), .reset)]).run(on: proxy)
            }
            try await client.waitForClose()
            #expect(ContinuousClock.now - start >= .milliseconds(50))
            #expect(log.count == 1)
            #expect(log[0].elapsed >= .milliseconds(50))
        }
    }

    @Test("a cancelled run stops early")
    func cancelled() async throws {
        try await withEchoProxy { _, proxy in
            let schedule: FaultSchedule = [.at(.zero, .latency(.milliseconds(1))), .at(.seconds(3_600), .cut)]
            let run = Task { await schedule.run(on: proxy) }
            try await eventually("the first fault") { proxy.statistics.faultsApplied == 1 }
            run.cancel()
            let log = try await within(.seconds(10), "the cancelled run") { await run.value }
            #expect(log.map(\.fault) == [.latency(.milliseconds(1))])
        }
    }
}

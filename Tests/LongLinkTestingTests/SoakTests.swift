import Foundation
import LongLink
import LongLinkTesting
import Testing

@Suite("Chaos soak")
struct SoakTests {
    /// The soak from the field, about a minute long (`LONGLINK_SOAK_SECONDS` changes it): nothing may
    /// hang, be lost, be duplicated or run twice, whatever the network does.
    @Test(.timeLimit(.minutes(5)))
    func nothingIsLostOnABadNetwork() async throws {
        let seconds = ProcessInfo.processInfo.environment["LONGLINK_SOAK_SECONDS"].flatMap(Int.init) ?? 60
        let runner = SoakRunner(configuration: SoakConfiguration(duration: .seconds(seconds)))
        let report = try await runner.run()
        print("soak report:\n\(report)")
        #expect(report.requestsSent > 0)
        #expect(report.requestsSucceeded > report.requestsSent / 2)
        #expect(report.requestsHung == 0)
        #expect(report.requestsExecutedTwice == 0)
        #expect(report.failuresAfterRecovery == 0)
        #expect(report.pushesEmitted > 0)
        #expect(report.pushesLost == 0)
        #expect(report.pushesDuplicated == 0)
        #expect(report.pushesOutOfOrder == 0)
        #expect(report.faultsInjected >= 5)
        #expect(report.reconnects >= 3)
        #expect(report.leftPending == 0)
        #expect(report.memoryWithinLimit)
    }
}

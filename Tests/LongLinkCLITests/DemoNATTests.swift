import Foundation
import LongLinkTestSupport
import Testing

@Suite("longlink demo --nat", .sharedMachine)
struct DemoNATTests {
    /// The adaptive heartbeat learns an interval below a 1 s NAT and says so; the probe that found the
    /// limit lost a link, replaced.
    @Test(.timeLimit(.minutes(5)))
    func theNATDemoPrintsWhatItLearned() async throws {
        let outcome = try await ToolProcess.run(["demo", "--nat", "1s"], within: .seconds(90))
        #expect(outcome.status == 0, "\(outcome.standardOutput)\nstderr: \(outcome.standardError)")
        let summary = try #require(outcome.lines.last, "\(outcome.standardOutput)")
        #expect(summary.hasPrefix("learned "), "\(summary)")
        #expect(summary.contains("on name:demo (NAT 1.0 seconds): stable"), "\(summary)")
        // The interval learned lies below the NAT's timeout.
        let value = summary.dropFirst("learned ".count).prefix { $0 != " " }
        let seconds = try #require(Double(value), "\(summary)")
        #expect(seconds > 0.1 && seconds < 1.0, "\(summary)")
        #expect(outcome.standardOutput.contains("heartbeat 0.1 seconds in force"))
    }

    @Test func aNATTooShortIsAUsageError() async throws {
        let outcome = try await ToolProcess.run(["demo", "--nat", "50ms"], within: .seconds(30))
        #expect(outcome.status != 0)
        #expect(outcome.standardError.contains("--nat needs at least 200ms"))
    }
}

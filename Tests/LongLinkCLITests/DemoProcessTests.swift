import Foundation
import LongLinkTestSupport
import Testing

@Suite("longlink demo", .sharedMachine)
struct DemoProcessTests {
    /// The README's first command, shortened: the summary names lost and duplicated, both 0.
    @Test(.timeLimit(.minutes(10)))
    func theDemoEndsWithASummaryOfNothingLost() async throws {
        let outcome = try await ToolProcess.run(["demo", "--duration", "12s", "--quiet"], within: .seconds(90))
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.contains("summary"))
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        let lost = lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("lost ") }
        let duplicates = lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("duplicates ") }
        #expect(lost?.hasSuffix(" 0") == true, "\(outcome.standardOutput)")
        #expect(duplicates?.hasSuffix(" 0") == true)
        let faults = lines.first { $0.contains("faults injected") }
        #expect(faults != nil && faults?.hasSuffix(" 0") == false)
    }

    @Test(.timeLimit(.minutes(10)))
    func theDemoOverTLSMakesItsCertificateAndLosesNothing() async throws {
        let outcome = try await ToolProcess.run(["demo", "--tls", "--duration", "12s"], within: .seconds(90))
        #expect(outcome.status == 0, "\(outcome.standardError)")
        #expect(outcome.standardOutput.contains("(TLS)"))
        #expect(outcome.standardOutput.contains("entered at run time"))
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        let lost = lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("lost ") }
        #expect(lost?.hasSuffix(" 0") == true, "\(outcome.standardOutput)")
        let faults = lines.first { $0.contains("faults injected") }
        #expect(faults != nil && faults?.hasSuffix(" 0") == false)
    }
}

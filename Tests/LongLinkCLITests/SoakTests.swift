import LongLinkCore
import Foundation
import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import longlink

@Suite("Chaos soak", .sharedMachine)
struct SoakTests {
    /// The soak from the field, about a minute long (`LONGLINK_SOAK_SECONDS` changes it): nothing may
    /// hang, be lost, be duplicated or run twice, whatever the network does.
    @Test(.timeLimit(.minutes(10)))
    func nothingIsLostOnABadNetwork() async throws {
        let seconds = ProcessInfo.processInfo.environment["LONGLINK_SOAK_SECONDS"].flatMap(Int.init) ?? 60
        var configuration = SoakConfiguration(duration: .seconds(seconds))
        // The test process is shared with every other suite running in parallel (2,000-connection
        // load tests among them), so its resident memory moves for reasons of theirs too; the
        // standalone `longlink soak` keeps the default, tighter bound.
        configuration.memoryGrowthLimit = 256 << 20
        // For the same reason a deadline's expiry can reach its caller late when the other suites
        // hold both cores: a request counts as hung 5 s past its deadline here, not the
        // standalone soak's 1 s (a request that never returns still counts).
        configuration.hangSlack = .seconds(5)
        let runner = SoakRunner(configuration: configuration)
        let report = try await runner.run()
        print("soak report:\n\(report)")
        expectNothingLost(report)
        #expect(report.faultsInjected >= 5)
        #expect(report.reconnects >= 3)
        #expect(report.leftPending == 0)
        #expect(report.memoryWithinLimit)
    }

    /// The same soak over TLS, shorter (`LONGLINK_TLS_SOAK_SECONDS`, default 20): every reconnect
    /// after a fault is a new handshake through the fault proxy.
    @Test(.timeLimit(.minutes(10)), .enabled(if: TestCertificates.opensslAvailable, "needs OpenSSL (tool and build)"))
    func nothingIsLostOverTLS() async throws {
        let seconds = ProcessInfo.processInfo.environment["LONGLINK_TLS_SOAK_SECONDS"].flatMap(Int.init) ?? 20
        let certificates = try await TestCertificates.make()
        var configuration = SoakConfiguration(duration: .seconds(seconds))
        configuration.memoryGrowthLimit = 256 << 20
        configuration.hangSlack = .seconds(5)
        configuration.quietTail = .seconds(5)
        configuration.serverTLS = ServerTLSConfiguration(
            certificateChain: .file(certificates.serverCertificate), privateKey: .file(certificates.serverKey))
        var client = TLSConfiguration()
        client.trustRoots = .pemFile(certificates.caCertificate)
        configuration.clientTLS = client
        let report = try await SoakRunner(configuration: configuration).run()
        print("TLS soak report:\n\(report)")
        expectNothingLost(report)
        #expect(report.reconnects >= 2)
        #expect(report.leftPending == 0)
    }

    /// The trading app's acceptance test, short: a kick for good ("logged in elsewhere", then a
    /// login again through the provider) and a credential expiry early in the run, with the
    /// 0.1 s request loop going on and nothing lost; no login ever presents an expired credential.
    @Test(.timeLimit(.minutes(5)))
    func aKickForGoodAndACredentialExpiryLoseNothing() async throws {
        var configuration = SoakConfiguration(duration: .seconds(20))
        configuration.credentialLifetime = .seconds(3)
        configuration.quietTail = .seconds(6)
        configuration.memoryGrowthLimit = 256 << 20
        configuration.hangSlack = .seconds(5)
        let faults = Locked<[String]>([])
        let report = try await SoakRunner(configuration: configuration).run { event in
            if case .fault(let text) = event { faults.withLock { $0.append(text) } }
        }
        print("credentials soak report:\n\(report)")
        expectNothingLost(report)
        let injected = faults.withLock { $0 }
        #expect(injected.contains { $0.hasPrefix("kick for good") })
        #expect(injected.contains { $0.hasPrefix("credential expiry") })
        #expect(report.relogins >= 1, "the app logged in again after the kick")
        #expect(report.credentials?.staleLogins == 0)
        #expect((report.credentials?.refreshes ?? 0) >= 2, "refreshed on the live link")
        #expect(
            (report.credentials?.logins ?? 0) >= 3, "the first login, the one after the kick, the one after the expiry")
        #expect(report.leftPending == 0)
    }

    /// A fleet of one is no fleet: refused before anything starts (the stores are never made).
    @Test func aFleetNeedsTwoServers() async throws {
        var configuration = SoakConfiguration(duration: .seconds(10))
        let made = Locked(0)
        configuration.fleet = SoakFleet(servers: 1) {
            made.withLock { $0 += 1 }
            throw LongLinkError(code: .unavailable, message: "no stores in this test")
        }
        await #expect {
            _ = try await SoakRunner(configuration: configuration).run()
        } throws: { error in
            (error as? LongLinkError)?.code == .invalidConfiguration
        }
        #expect(made.withLock { $0 } == 0)
    }

    /// What every soak must show: requests answered, nothing hung, lost, duplicated or run twice.
    private func expectNothingLost(_ report: SoakReport, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(report.requestsSent > 0, sourceLocation: sourceLocation)
        #expect(report.requestsSucceeded > report.requestsSent / 2, sourceLocation: sourceLocation)
        #expect(report.requestsHung == 0, sourceLocation: sourceLocation)
        #expect(report.requestsExecutedTwice == 0, sourceLocation: sourceLocation)
        #expect(report.failuresAfterRecovery == 0, sourceLocation: sourceLocation)
        #expect(report.pushesEmitted > 0, sourceLocation: sourceLocation)
        #expect(report.pushesLost == 0, sourceLocation: sourceLocation)
        #expect(report.pushesDuplicated == 0, sourceLocation: sourceLocation)
        #expect(report.pushesOutOfOrder == 0, sourceLocation: sourceLocation)
    }
}

import Foundation
import Testing

@testable import longlink_bench

/// `longlink-bench links`, tiny: 50 links, a short idle window, the storm; every figure present
/// and sane.
@Suite("longlink-bench links")
struct LinksBenchTests {
    static let keys = [
        "links.memory_per_link", "links.idle_cpu_per_link_minute", "links.connect_seconds", "storm.resynced_p50",
        "storm.resynced_p99", "storm.resynced_p100", "storm.restart", "storm.logins_per_second",
        "storm.cpu_per_login", "storm.peak_attempts_per_second", "storm.gave_up", "storm.pushes_lost",
    ]
    static let redisKeys = [
        "links.redis.memory_per_link", "links.redis.idle_cpu_per_link_minute", "links.redis.connect_seconds",
    ]
    static let natsKeys = [
        "links.nats.memory_per_link", "links.nats.idle_cpu_per_link_minute", "links.nats.connect_seconds",
        "links.memory_per_link_against_nats",
    ]
    static let links = 50

    @Test func notPartOfAllAndNamed() {
        #expect(!BenchCommand.scenarios.contains("links"), "links starts processes and takes a minute: not part of all")
        #expect(BenchCommand.names.contains("links"))
    }

    /// Sources spread over 127.0.0.0/8, never 127.0.0.x (the server's own address), ``LinkClients/linksPerAddress`` each.
    @Test func sourceAddressesSpreadOverLoopback() {
        func octets(_ index: Int) -> [UInt32] {
            let address = UInt32(bigEndian: LinkClients.sourceAddress(of: index))
            return [address >> 24, (address >> 16) & 255, (address >> 8) & 255, address & 255]
        }
        #expect(octets(0) == [127, 1, 0, 1])
        #expect(octets(LinkClients.linksPerAddress - 1) == [127, 1, 0, 1])
        #expect(octets(LinkClients.linksPerAddress) == [127, 1, 0, 2])
        #expect(octets(LinkClients.linksPerAddress * 250) == [127, 1, 1, 1])
        #expect(octets(1_000_000)[1] >= 1)
    }

    @Test func peakCountsTheBusiestWindow() {
        #expect(LinksBenchmark.Storm.peak([0, 0.1, 0.2, 1.5, 1.6, 1.7, 1.8], window: 1) == 4)
        #expect(LinksBenchmark.Storm.peak([], window: 1) == 0)
        let fields = LinksBenchmark.Storm.parse("report synced=2 lost=0 times=1.5,2.5 attempts=")
        #expect(fields["times"] == [1.5, 2.5])
        #expect(fields["lost"] == [0])
        #expect(fields["attempts"] == [])
    }

    @Test func tinyRunHasEveryFigure() async throws {
        let outcome = try await BenchCommandTests.bench(
            ["links", "--links", String(Self.links), "--idle", "500ms", "--json"], within: .seconds(280))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        let notes = try #require(object["notes"] as? [String])
        func value(_ key: String) throws -> Double {
            try #require((results[key] as? [String: Any])?["value"] as? Double, "\(key) in \(results.keys.sorted())")
        }
        let natsPresent =
            NATSPeer.locate("nats-server") != nil || NATSPeer.locate("nats-server", path: "/usr/sbin") != nil
        let expected =
            Self.keys + (FleetBenchTests.redisPresent ? Self.redisKeys : []) + (natsPresent ? Self.natsKeys : [])
        #expect(Set(expected).isSubset(of: Set(results.keys)), "\(results.keys.sorted())")
        if FleetBenchTests.redisPresent {
            // LongLink's memory per link beside Redis's per idle connection, as a ratio.
            let row = try #require(results["links.memory_per_link"] as? [String: Any])
            #expect((row["baseline"] as? Double ?? 0) > 0, "\(row)")
            #expect((row["ratio"] as? Double ?? 0) > 0, "\(row)")
        }
        // Memory: positive, and far below a megabyte per link.
        #expect(try value("links.memory_per_link") > 0)
        #expect(try value("links.memory_per_link") < 1_048_576)
        #expect(try value("links.idle_cpu_per_link_minute") >= 0)
        #expect(try value("links.connect_seconds") > 0)
        // The storm: ordered times, after the restart, within the bound; every link back, nothing lost.
        let (p50, p99, p100) = (
            try value("storm.resynced_p50"), try value("storm.resynced_p99"), try value("storm.resynced_p100")
        )
        let restart = try value("storm.restart")
        #expect(restart > 0)
        #expect(restart < p50 && p50 <= p99 && p99 <= p100 && p100 < 120, "\(restart) \(p50) \(p99) \(p100)")
        #expect(try value("storm.logins_per_second") > 0)
        #expect(try value("storm.cpu_per_login") >= 0)
        // Every link tried at least once; the busiest second saw at least one attempt.
        #expect(try value("storm.peak_attempts_per_second") >= 1)
        #expect(try value("storm.gave_up") == 0)
        #expect(try value("storm.pushes_lost") == 0)
        #expect(notes.contains { $0.contains("descriptors (ulimit -n)") && $0.contains("bare protocol client") })
        if !FleetBenchTests.redisPresent {
            #expect(notes.contains { $0.hasPrefix("links: Redis rows skipped") })
        }
        if !natsPresent {
            #expect(notes.contains { $0.hasPrefix("links: NATS rows skipped") })
        }
    }
}

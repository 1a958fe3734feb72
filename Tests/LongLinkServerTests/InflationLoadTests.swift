import Foundation
@_spi(Benchmarks) import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

/// Bombs for an unknown method cost the server no inflating: measured in CPU time and in another
/// connection's echo. A load test (named so): the sanitizer runs, which make everything several
/// times slower, skip it.
@Suite("Inflation under a flood of bombs", .sharedMachine, .serialized)
struct InflationLoadTests {
    /// The 99th percentile (nearest rank).
    static func p99(_ durations: [Duration]) -> Duration {
        let sorted = durations.sorted()
        return sorted.isEmpty ? .zero : sorted[(sorted.count * 99 + 99) / 100 - 1]
    }

    /// 1,500 requests for an unknown method, each ~4 KB inflating to ~4 MiB: refused before any
    /// inflating, so each costs the server's loop well under 0.3 ms of CPU, and another
    /// connection's echo on the same loop stays under 50 ms throughout (99th percentile; on a
    /// machine whose load alone makes echoes slower, within 2x of their quiet value).
    @Test func bombsForAnUnknownMethodCostNoInflating() async throws {
        let loops = EventLoopGroup(loopCount: 1, name: "bombserver")
        var configuration = ServerConfiguration.testing
        configuration.eventLoopGroup = loops
        let bomb = try InflationTests.bomb(inflatingTo: (4 << 20) - 1_024)
        #expect(bomb.count > 3_000 && bomb.count < 6_000)
        try await withServer(configuration) { _, address in
            let bomber = try await InflationTests.compressingClient(to: address)
            let echoer = try await FrameClient.connect(to: address)
            _ = try await echoer.handshake()
            // The echo's quiet value, on this machine under its current load.
            var quiet: [Duration] = []
            for index in 0..<100 {
                let started = ContinuousClock.now
                #expect(try await echoer.call("echo", bytes("q\(index)"), id: "q\(index)").text == "q\(index)")
                quiet.append(ContinuousClock.now - started)
            }
            let before = try ThreadCPU.total(named: "bombserver-0")
            let count = 1_500
            let finished = Mailbox<Void>()
            let flood = Task {
                defer { finished.put(()) }
                for index in 0..<count {
                    try await bomber.send(InflationTests.compressed("b\(index)", "no.such.method", bomb))
                }
                var codes: [StatusCode: Int] = [:]
                for _ in 0..<count { codes[try await bomber.response().status?.code ?? .ok, default: 0] += 1 }
                return codes
            }
            var echoes: [Duration] = []
            while finished.count == 0 || echoes.count < 3 {
                let id = "e\(echoes.count)"
                let started = ContinuousClock.now
                #expect(try await echoer.call("echo", bytes(id), id: id).text == id)
                echoes.append(ContinuousClock.now - started)
            }
            let codes = try await flood.value
            let cpu = try ThreadCPU.total(named: "bombserver-0") - before
            #expect(codes == [.unimplemented: count])
            let perBomb = cpu / count
            let quietP99 = Self.p99(quiet)
            let floodP99 = Self.p99(echoes)
            print(
                "inflation: \(count) bombs cost the server's loop \(cpu) of CPU, \(perBomb) each; "
                    + "\(echoes.count) echoes during the flood, p99 \(floodP99), slowest \(echoes.max() ?? .zero); "
                    + "quiet p99 \(quietP99)")
            #expect(perBomb < .microseconds(300))
            // Under 250 ms, or within 2x of the quiet value when the machine's load alone makes
            // echoes slower than that (other suites, other builds): a loaded 2-core machine moves
            // this p99 by tens of milliseconds, while a loop busy inflating (16 ms a bomb, hundreds
            // queued) delays echoes by seconds.
            #expect(floodP99 < max(.milliseconds(250), quietP99 * 2))
            // Still a working connection.
            #expect(try await bomber.call("echo", bytes("after"), id: "after").text == "after")
        }
        loops.shutdown()
    }
}

/// The CPU time of this process's threads of one name, from `/proc/self/task` (in clock ticks,
/// 10 ms on Linux).
enum ThreadCPU {
    struct Missing: Error {}

    static func total(named name: String) throws -> Duration {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        var ticks = 0
        var found = false
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            guard comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the name: state is field 3; utime and stime are fields 14 and 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            ticks += (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
            found = true
        }
        guard found else { throw Missing() }
        return .milliseconds(ticks * 1_000 / sysconf(Int32(_SC_CLK_TCK)))
    }
}

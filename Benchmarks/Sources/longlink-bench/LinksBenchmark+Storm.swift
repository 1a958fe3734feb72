import Foundation

/// The reconnect storm of `longlink-bench links`: every client process forgets its counts
/// (`mark`), the server gets SIGKILL and is started again on the same port and data directory,
/// and each link comes back on the library's backoff (full jitter) until it is logged in,
/// subscribed and has its held pushes again. Times are from the kill; the server's logins per
/// second and CPU per login are from the moment the new process listens.
extension LinksBenchmark {
    struct Storm {
        /// Seconds from the kill until 50, 99 and 100 % of the links were synced again.
        var p50: Double
        var p99: Double
        var p100: Double
        /// Seconds from the kill until the new server listened.
        var restart: Double
        var loginsPerSecond: Double
        /// Microseconds of server CPU per login, from the moment it listened to the last link synced.
        var cpuPerLogin: Double
        /// The most connection attempts in any one-second window, from the clients' side.
        var peakAttempts: Double
        var attempts: Int
        /// Links not synced again within the bound.
        var notBack: Int
        /// Held pushes not redelivered.
        var lost: Int
        var load: String
        /// CPU seconds of the new server and of the client processes over the storm.
        var serverCPU: Double
        var clientsCPU: Double

        static func run(links: Int, clients: [LinksChild], server: inout Server, directory: String) async throws
            -> Storm
        {
            for client in clients { client.send("mark") }
            for client in clients { _ = try await client.line(startingWith: "marked", within: .seconds(30)) }
            let load = LinksChild.loadAverage()
            let clientsCPU = clients.reduce(0) { $0 + LinksChild.cpuSeconds(of: $1.pid) }
            benchProgress("links: the storm: SIGKILL to the server (pid \(server.child.pid)), started again")
            let killedAt = LinkClients.now()
            await server.child.kill()
            server = try await LinksBenchmark.startServer(directory: directory, port: server.port, capacity: links)
            let listening = LinkClients.now()
            let cpuStart = LinksChild.cpuSeconds(of: server.child.pid)
            var times: [Double] = []
            var attempts: [Double] = []
            var lost = 0
            var lastReport = listening
            let bound = Duration.seconds(120 + links / 100)
            let deadline = ContinuousClock.now.advanced(by: bound)
            for client in clients {
                let remaining = max(.milliseconds(1), deadline - ContinuousClock.now)
                let line: String
                do {
                    line = try await client.line(startingWith: "report", within: remaining)
                } catch {
                    client.send("report")
                    line = try await client.line(startingWith: "report", within: .seconds(30))
                }
                lastReport = max(lastReport, LinkClients.now())
                let fields = parse(line)
                times += (fields["times"] ?? []).map { $0 - killedAt }
                attempts += fields["attempts"] ?? []
                lost += Int(fields["lost"]?.first ?? 0)
            }
            let cpu = LinksChild.cpuSeconds(of: server.child.pid) - cpuStart
            let clientsUsed = clients.reduce(0) { $0 + LinksChild.cpuSeconds(of: $1.pid) } - clientsCPU
            times.sort()
            attempts.sort()
            let last = times.last ?? (lastReport - killedAt)
            let loginWindow = max(1e-3, last - (listening - killedAt))
            return Storm(
                p50: BenchStats.percentile(times, 0.5), p99: BenchStats.percentile(times, 0.99), p100: last,
                restart: listening - killedAt, loginsPerSecond: Double(times.count) / loginWindow,
                cpuPerLogin: times.isEmpty ? 0 : cpu / Double(times.count) * 1e6,
                peakAttempts: peak(attempts, window: 1), attempts: attempts.count, notBack: links - times.count,
                lost: lost, load: "\(load) before, \(LinksChild.loadAverage()) after", serverCPU: cpu,
                clientsCPU: clientsUsed)
        }

        /// `report synced=N lost=P times=… attempts=…` as numbers.
        static func parse(_ line: String) -> [String: [Double]] {
            var fields: [String: [Double]] = [:]
            for field in line.split(separator: " ").dropFirst() {
                let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { continue }
                fields[String(parts[0])] = parts[1].split(separator: ",").compactMap { Double($0) }
            }
            return fields
        }

        /// The most of `sorted` times in any window of `window` seconds.
        static func peak(_ sorted: [Double], window: Double) -> Double {
            var best = 0
            var start = 0
            for end in sorted.indices {
                while sorted[end] - sorted[start] > window { start += 1 }
                best = max(best, end - start + 1)
            }
            return Double(best) / window
        }

        func add(links: Int, into report: inout BenchReport) {
            let note =
                "from the SIGKILL; \(links) links; CPU meanwhile: server \(String(format: "%.2f", serverCPU)) s, "
                + "client processes \(String(format: "%.2f", clientsCPU)) s; load \(load)"
            for (name, value) in [("p50", p50), ("p99", p99), ("p100", p100)] {
                report.add(
                    BenchFigure(
                        key: "storm.resynced_\(name)",
                        label: "storm: \(name.dropFirst()) % of links logged in and synced again",
                        unit: "s", samples: [value], note: note))
            }
            report.add(
                BenchFigure(
                    key: "storm.restart", label: "storm: server listening again", unit: "s", samples: [restart],
                    note: "SIGKILL, then the same server on the same port and durable data directory"))
            report.add(
                BenchFigure(
                    key: "storm.logins_per_second", label: "storm: server logins per second", unit: "logins/s",
                    samples: [loginsPerSecond], note: "links synced / (last synced - listening); load \(load)"))
            report.add(
                BenchFigure(
                    key: "storm.cpu_per_login", label: "storm: server CPU per login (with Sync and redelivery)",
                    unit: "µs", samples: [cpuPerLogin],
                    note: "server CPU from listening to the last link synced / links (Hello, login, Subscribe, Sync, "
                        + "\(LinkClients.heldPushes) pushes read from the store and sent)"))
            report.add(
                BenchFigure(
                    key: "storm.peak_attempts_per_second", label: "storm: peak connection attempts per second",
                    unit: "attempts/s", samples: [peakAttempts],
                    note: "most attempts in any 1 s window, client side; \(attempts) attempts in all; Backoff() "
                        + "defaults: 250 ms doubling to 30 s, full jitter"))
            report.add(
                BenchFigure(
                    key: "storm.gave_up", label: "storm: links not back within the bound", unit: "links",
                    samples: [Double(notBack)], target: .atMost(0, "none")))
            report.add(
                BenchFigure(
                    key: "storm.pushes_lost", label: "storm: held pushes not redelivered", unit: "pushes",
                    samples: [Double(lost)], target: .atMost(0, "none"),
                    note: "each link holds \(LinkClients.heldPushes) unacknowledged; synced = all redelivered"))
        }
    }
}

import Foundation

/// A RESP2 reply, as ``RedisProbe`` reads it.
package enum RedisReply: Equatable, Sendable {
    case simple(String)
    case error(String)
    case integer(Int)
    case bulk([UInt8]?)
    case array([RedisReply]?)

    /// A simple or bulk string's text.
    package var text: String? {
        switch self {
        case .simple(let text): text
        case .bulk(let bytes?): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }
}

/// A blocking RESP2 connection to a Redis on an IPv4 address, with bounded reads and writes: what
/// starts and checks the tool's, the tests' and the benchmarks' own `redis-server`s
/// (``LocalRedisServer``, ``LocalRedisCluster``) and asks them questions (`INFO`, `CLUSTER NODES`),
/// apart from LongLinkRedis's client, so that it adds nothing to what is measured or tested and
/// needs no event loop.
package final class RedisProbe {
    /// The connection or an exchange failed.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    private let socket: BlockingSocket
    private var buffer: [UInt8] = []
    private var position = 0

    /// Connects to `host:port` (an IPv4 address; names are not resolved), each read and write then
    /// bounded by `timeout`.
    package init(host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(10)) throws {
        do {
            socket = try BlockingSocket(host: host, port: port, timeout: timeout)
        } catch {
            throw Failure(description: error.description)
        }
    }

    /// Sends one command and reads its reply (an error reply is a reply, not a throw).
    package func command(_ arguments: [String]) throws -> RedisReply {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.utf8.count)\r\n".utf8) + Array(argument.utf8) + [13, 10]
        }
        do {
            try socket.write(bytes)
        } catch {
            throw Failure(description: "write to Redis: \(error)")
        }
        return try reply()
    }

    /// The `INFO` section's `key:value` lines.
    package func info(_ section: String) throws -> [String: String] {
        guard let text = try command(["INFO", section]).text else {
            throw Failure(description: "INFO \(section): no text")
        }
        var fields: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = String(line[line.index(after: colon)...])
        }
        return fields
    }

    /// Calls per command since Redis started (`INFO commandstats`), commands run by scripts included.
    package func commandCalls() throws -> [String: Int] {
        try info("commandstats").reduce(into: [:]) { calls, field in
            guard field.key.hasPrefix("cmdstat_"),
                let value = field.value.split(separator: ",").first(where: { $0.hasPrefix("calls=") })
            else { return }
            calls[String(field.key.dropFirst("cmdstat_".count))] = Int(value.dropFirst("calls=".count))
        }
    }

    /// Redis's CPU time (user + system) since it started.
    package func cpuSeconds() throws -> Double {
        let cpu = try info("cpu")
        return (Double(cpu["used_cpu_user"] ?? "") ?? 0) + (Double(cpu["used_cpu_sys"] ?? "") ?? 0)
    }

    /// Connections open now, this one included (`CLIENT LIST`).
    package func clientCount() throws -> Int {
        guard let text = try command(["CLIENT", "LIST"]).text else {
            throw Failure(description: "CLIENT LIST: no text")
        }
        return text.split(whereSeparator: \.isNewline).count
    }

    /// One command on a connection of its own, with short timeouts; nil when nothing answers.
    package static func ask(
        host: String = "127.0.0.1", port: Int, _ arguments: [String], timeout: Duration = .milliseconds(500)
    ) -> RedisReply? {
        try? RedisProbe(host: host, port: port, timeout: timeout).command(arguments)
    }

    /// The process id the Redis on `port` reports in `INFO server`; nil when nothing there says
    /// so. Tells a redis-server of ours from another that holds the port it was given.
    package static func processID(port: Int) -> Int32? {
        guard let probe = try? RedisProbe(port: port, timeout: .milliseconds(500)) else { return nil }
        return (try? probe.info("server"))?["process_id"].flatMap { Int32($0) }
    }

    /// True when something on `host:port` replies to `PING` with a RESP reply: `+PONG`, or an error
    /// such as `-NOAUTH` (a Redis that wants a password still answers). Nil when `host` is not an
    /// IPv4 address (names are not resolved here).
    package static func answers(host: String, port: Int, timeout: Duration = .milliseconds(500)) -> Bool? {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        switch ask(host: host, port: port, ["PING"], timeout: timeout) {
        case .simple?, .error?: return true
        default: return false
        }
    }

    private func byte() throws -> UInt8 {
        if position == buffer.count {
            let chunk: [UInt8]
            do {
                chunk = try socket.read()
            } catch {
                throw Failure(description: "read from Redis: \(error)")
            }
            guard !chunk.isEmpty else { throw Failure(description: "read from Redis: closed") }
            buffer = chunk
            position = 0
        }
        defer { position += 1 }
        return buffer[position]
    }

    private func line() throws -> String {
        var bytes: [UInt8] = []
        while true {
            let next = try byte()
            if next == 10, bytes.last == 13 { return String(decoding: bytes.dropLast(), as: UTF8.self) }
            bytes.append(next)
        }
    }

    private func reply() throws -> RedisReply {
        let kind = try byte()
        let rest = try line()
        switch kind {
        case UInt8(ascii: "+"): return .simple(rest)
        case UInt8(ascii: "-"): return .error(rest)
        case UInt8(ascii: ":"): return .integer(Int(rest) ?? 0)
        case UInt8(ascii: "$"):
            guard let length = Int(rest), length >= 0 else { return .bulk(nil) }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(length + 2)
            for _ in 0..<(length + 2) { bytes.append(try byte()) }
            return .bulk(Array(bytes.prefix(length)))
        case UInt8(ascii: "*"):
            guard let count = Int(rest), count >= 0 else { return .array(nil) }
            return .array(try (0..<count).map { _ in try reply() })
        default: throw Failure(description: "unexpected RESP type byte \(kind)")
        }
    }
}

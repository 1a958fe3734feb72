/// A Lua script run with `EVALSHA`, by its SHA-1, falling back to `EVAL` (which also caches it in
/// Redis) when Redis answers `NOSCRIPT`, as after a restart or `SCRIPT FLUSH`.
struct RedisScript: Sendable {
    let source: [UInt8]
    let sha: String

    init(_ source: String) {
        self.source = Array(source.utf8)
        self.sha = SHA1.hexDigest(self.source)
    }

    /// `EVALSHA sha numkeys keys… args…`.
    func evalSHA(keys: [[UInt8]], arguments: [[UInt8]]) -> RedisCommand {
        RedisCommand(
            [Array("EVALSHA".utf8), Array(sha.utf8), Array(String(keys.count).utf8)] + keys + arguments,
            keys: 3..<3 + keys.count)
    }

    /// `EVAL source numkeys keys… args…`.
    func eval(keys: [[UInt8]], arguments: [[UInt8]]) -> RedisCommand {
        RedisCommand(
            [Array("EVAL".utf8), source, Array(String(keys.count).utf8)] + keys + arguments,
            keys: 3..<3 + keys.count)
    }
}

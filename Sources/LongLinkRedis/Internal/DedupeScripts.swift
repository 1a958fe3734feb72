/// The compare-and-set scripts of ``RedisDedupeStore``. Each touches entries of one hash tag (one slot).
///
/// The batch scripts (``claimAll``, ``finishAll``) act on every entry of a batch of one hash tag,
/// each exactly as if alone, so that one call serves the batch: an entry Redis refuses (a key of
/// another type, a write refused at the memory limit) gets its own error reply in the result and
/// leaves the others alone.
enum DedupeScripts {
    /// KEYS: entries (one hash tag). ARGV: the owner's running value, then each entry's claim term
    /// in ms. Per entry, `SET entry running NX PX term GET`: returns, per entry, `''` when it was
    /// claimed, else the value it holds (running, `D<reply>` or `U`), or its error.
    static let claimAll = RedisScript(
        """
        local result = {}
        for i = 1, #KEYS do
          result[i] = redis.pcall('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[i + 1], 'GET') or ''
        end
        return result
        """)

    /// KEYS: entries (one hash tag). ARGV: the owner's running value, the publish command
    /// (`PUBLISH`, or `SPUBLISH` on a cluster), then each entry's reply value and window in ms (a
    /// pair per entry). Per entry: the reply is stored for the window and `finished` published on
    /// `<entry>:n` only while the entry holds the running value (a claim that lapsed is another
    /// server's or marked `UNKNOWN`). Returns 1 (stored), 0 or an error per entry.
    static let finishAll = RedisScript(
        """
        local result = {}
        for i = 1, #KEYS do
          local held = redis.pcall('GET', KEYS[i])
          if held ~= ARGV[1] then
            result[i] = type(held) == 'table' and held or 0
          else
            local stored = redis.pcall('SET', KEYS[i], ARGV[2 * i + 1], 'PX', ARGV[2 * i + 2])
            if type(stored) == 'table' and stored.err then
              result[i] = stored
            else
              redis.call(ARGV[2], KEYS[i] .. ':n', 'finished')
              result[i] = 1
            end
          end
        end
        return result
        """)

    /// KEYS: entry. ARGV: the owner's running value, the notice channel, the publish command.
    static let abandon = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('DEL', KEYS[1])
          redis.call(ARGV[3], ARGV[2], 'abandoned')
          return 1
        end
        return 0
        """)

    /// KEYS: entry. ARGV: the owner's running value, the claim's term in ms.
    static let renew = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('PEXPIRE', KEYS[1], ARGV[2])
          return 1
        end
        return 0
        """)

    /// KEYS: entry. ARGV: the dead owner's running value, the notice channel, the publish command.
    /// The entry keeps its time to live: a resend within its caller's deadline still finds it and
    /// is not run.
    static let markUnknown = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('SET', KEYS[1], 'U', 'KEEPTTL')
          redis.call(ARGV[3], ARGV[2], 'unknown')
          return 1
        end
        return 0
        """)
}

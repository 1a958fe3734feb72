/// The compare-and-set scripts of ``RedisDedupeStore``. Each touches entries of one hash tag (one slot).
///
/// The batch scripts (``claimAll``, ``finishAll``) act on every entry of a batch of one hash tag,
/// each exactly as if alone, so that one call serves the batch: an entry Redis refuses (a key of
/// another type, a write refused at the memory limit) gets its own error reply in the result and
/// leaves the others alone.
enum DedupeScripts {
    /// KEYS: entries (one hash tag). ARGV: the owner's running value, then each entry's claim term
    /// in ms. Per entry, `SET entry running NX PX term GET`: returns, per entry, `''` when it was
    /// claimed, else the value it holds (running, `D<reply>`, `U` or `UL`), or its error.
    static let claimAll = RedisScript(
        """
        local result = {}
        for i = 1, #KEYS do
          result[i] = redis.pcall('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[i + 1], 'GET') or ''
        end
        return result
        """)

    /// ``claimAll`` on a cluster with asynchronous replication, where a failover may lose the last
    /// writes: a stored reply or a claim, after which a copy of the request would run again.
    ///
    /// KEYS: the lineage record of the hash tag, then the entries. ARGV: the owner's running value,
    /// the de-dup window in ms, then each entry's claim term in ms and whether the request is a
    /// copy (`1`: `Request.resent`, else `0`). The record holds the replication id (`master_replid`)
    /// its entries were written under (`r`) and the Redis time in ms at which the script last saw
    /// it change (`t`). Another id (a replica promoted, a slot moved, a node restarted) or no
    /// record at all (its own loss is a sign of lost writes) counts as a change at this moment.
    /// While the last change is less than a window old, a copy that finds no entry may have lost
    /// it: the entry is set to `UL` for the window and returned (the caller answers `UNKNOWN`, and
    /// so does every later copy, which finds it; a server that knows only `U` reads it as `U`).
    /// Other entries are claimed as
    /// ``claimAll`` claims them. The record lives two windows past the last claim.
    static let claimAllChecked = RedisScript(
        """
        local id = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)') or ''
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local window = tonumber(ARGV[2])
        local record = redis.call('HMGET', KEYS[1], 'r', 't')
        local changed = tonumber(record[2])
        if record[1] ~= id or not changed then
          changed = now
          redis.call('HSET', KEYS[1], 'r', id, 't', changed)
        end
        redis.call('PEXPIRE', KEYS[1], 2 * window)
        local recent = now - changed < window
        local result = {}
        for i = 2, #KEYS do
          if recent and ARGV[2 * i] == '1' then
            result[i - 1] = redis.pcall('SET', KEYS[i], 'UL', 'NX', 'PX', window, 'GET') or 'UL'
          else
            result[i - 1] = redis.pcall('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2 * i - 1], 'GET') or ''
          end
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

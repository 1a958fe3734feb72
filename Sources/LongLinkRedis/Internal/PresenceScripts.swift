/// The Lua scripts of the fleet's presence (``RedisPushStore/updatePresence(_:)``): a sorted set per
/// principal (``RedisKeys/presence(principal:)``) whose members are sessions and whose scores are
/// when their leases end, in Redis's own time (`TIME` in the script), so that no server's clock
/// matters. Every script prunes the sessions whose lease has passed before it answers or writes.
enum PresenceScripts {
    /// KEYS: presence sets (one slot on a cluster). ARGV: the lease in ms, the members' prefix
    /// (`<serverID>/<instance>/`), then per key the count of sessions present and of sessions
    /// absent, then their connection ids (present first). Adds or renews the present ones (lease
    /// from now), removes the absent ones and the expired, and keeps each set's key for at least
    /// a lease (never shortening another server's longer one), so that a set nobody renews goes
    /// with its last session. Returns 0.
    static let update = RedisScript(
        """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local lease = tonumber(ARGV[1])
        local prefix = ARGV[2]
        local a = 3
        for i = 1, #KEYS do
          local present = tonumber(ARGV[a])
          local absent = tonumber(ARGV[a + 1])
          a = a + 2
          for _ = 1, present do
            redis.call('ZADD', KEYS[i], now + lease, prefix .. ARGV[a])
            a = a + 1
          end
          for _ = 1, absent do
            redis.call('ZREM', KEYS[i], prefix .. ARGV[a])
            a = a + 1
          end
          redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
          local ttl = redis.call('PTTL', KEYS[i])
          if ttl == -1 or (ttl >= 0 and ttl < lease) then redis.call('PEXPIRE', KEYS[i], lease) end
        end
        return 0
        """)

    /// KEYS: one presence set. ARGV: the most members to list. Prunes the sessions whose lease has
    /// passed and returns `{count, {member, …}}`.
    static let read = RedisScript(
        """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
        return {redis.call('ZCARD', KEYS[1]), redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)}
        """)
}

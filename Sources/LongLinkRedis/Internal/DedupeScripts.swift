/// The compare-and-set scripts of ``RedisDedupeStore``. Each touches one entry (one hash slot).
enum DedupeScripts {
    /// KEYS: entry. ARGV: the owner's running value, the reply value, the window in ms, the
    /// notice channel.
    static let finish = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
          redis.call('PUBLISH', ARGV[4], 'finished')
          return 1
        end
        return 0
        """)

    /// KEYS: entry. ARGV: the owner's running value, the notice channel.
    static let abandon = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('DEL', KEYS[1])
          redis.call('PUBLISH', ARGV[2], 'abandoned')
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

    /// KEYS: entry. ARGV: the dead owner's running value, the notice channel. The entry keeps its
    /// time to live: a resend within its caller's deadline still finds it and is not run.
    static let markUnknown = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('SET', KEYS[1], 'U', 'KEEPTTL')
          redis.call('PUBLISH', ARGV[2], 'unknown')
          return 1
        end
        return 0
        """)
}

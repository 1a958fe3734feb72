/// The Lua scripts of ``RedisPushStore``: each runs atomically in Redis, so that two servers
/// producing for one principal at once cannot both pass the bound or take one seq.
enum PushScripts {
    /// KEYS: meta, stream. ARGV: topic, payload, size, capacity, byte capacity, a fresh epoch, channel.
    ///
    /// A missing meta hash means the store lost the principal (a restart without persistence, a
    /// flush): it starts anew with the fresh epoch, and its seqs go on after any left in the stream
    /// (XADD accepts only ids above the stream's last). Returns `{1, seq, epoch}`, or `{0, held,
    /// bytes}` when the principal's bound is reached.
    static let produce = RedisScript(
        """
        local epoch = redis.call('HGET', KEYS[1], 'epoch')
        if not epoch then
          epoch = ARGV[6]
          local base = 0
          if redis.call('EXISTS', KEYS[2]) == 1 then
            local info = redis.call('XINFO', 'STREAM', KEYS[2])
            for i = 1, #info, 2 do
              if info[i] == 'last-generated-id' then base = tonumber(string.match(info[i + 1], '^(%d+)')) end
            end
          end
          redis.call('HSET', KEYS[1], 'epoch', epoch, 'seq', base, 'bytes', 0)
        end
        local held = redis.call('XLEN', KEYS[2])
        local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes') or '0')
        local size = tonumber(ARGV[3])
        if held >= tonumber(ARGV[4]) or size > tonumber(ARGV[5]) - bytes then
          return {0, held, bytes}
        end
        local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
        redis.call('XADD', KEYS[2], seq .. '-0', 't', ARGV[1], 'd', ARGV[2], 'e', epoch)
        redis.call('HINCRBY', KEYS[1], 'bytes', size)
        redis.call('PUBLISH', ARGV[7], epoch .. ':' .. seq)
        return {1, seq, tonumber(epoch)}
        """)

    /// KEYS: meta, stream. ARGV: the seqs acknowledged. XDELs those stored and gives their bytes
    /// back to the bound; returns how many it deleted.
    static let acknowledge = RedisScript(
        """
        local freed = 0
        local removed = 0
        for i = 1, #ARGV do
          local id = ARGV[i] .. '-0'
          local entry = redis.call('XRANGE', KEYS[2], id, id)
          if #entry == 1 then
            local fields = entry[1][2]
            for j = 1, #fields, 2 do
              if fields[j] == 't' or fields[j] == 'd' then freed = freed + string.len(fields[j + 1]) end
            end
            removed = removed + redis.call('XDEL', KEYS[2], id)
          end
        end
        if freed > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
          if redis.call('HINCRBY', KEYS[1], 'bytes', -freed) < 0 then redis.call('HSET', KEYS[1], 'bytes', 0) end
        end
        return removed
        """)
}

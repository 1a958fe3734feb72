/// The Lua scripts of ``RedisPushStore``: each runs atomically in Redis, so that two servers
/// producing for one principal at once cannot both pass the bound or take one seq.
enum PushScripts {
    /// KEYS: meta, stream. ARGV: each push's topic, payload and size (a triple per push), then the
    /// capacity, the byte capacity, a fresh epoch, the channel, the publish command (`PUBLISH`, or
    /// `SPUBLISH` on a cluster) and whether to check the lineage (`1` on a cluster, else `0`).
    ///
    /// Group commit: Redis pays mostly for calling a script, not for the commands in it, so one call
    /// stores a batch. Each push is checked against the bounds in order, exactly as if each were
    /// produced alone: one that does not fit is refused (seq 0), the ones before it stay stored,
    /// a later smaller one may still fit. The accepted ones take consecutive seqs; one `HSET` then
    /// records the last seq and the bytes, and one `PUBLISH` tells the last `<epoch>:<seq>` (a server
    /// reads everything after the seq it last sent on any notice, so one per batch suffices).
    ///
    /// A missing meta hash means the store lost the principal (a restart without persistence, a
    /// flush): it starts anew with the fresh epoch, and its seqs go on after any left in the stream
    /// (XADD accepts only ids above the stream's last). Returns `{epoch, seq₁, …, seqₙ}`, seq 0 for a
    /// push refused by the principal's bound.
    ///
    /// The lineage (cluster): the meta hash records the replication id (`master_replid`) of the
    /// primary that last wrote it. Another id means the principal's log was written on another
    /// primary since: a replica that took over after a failover (replication is asynchronous, so
    /// it may lack the last pushes, whose seqs would be given again and swallowed by clients as
    /// seen), a slot moved by resharding, a restarted node. Nothing proves the log whole then, so
    /// the principal starts a fresh epoch, its seqs going on after the stream's last.
    static let produce = RedisScript(
        """
        local n = (#ARGV - 6) / 3
        local capacity = tonumber(ARGV[#ARGV - 5])
        local byteCapacity = tonumber(ARGV[#ARGV - 4])
        local meta = redis.call('HMGET', KEYS[1], 'epoch', 'seq', 'bytes', 'r')
        local epoch = meta[1]
        local seq = tonumber(meta[2] or '0')
        local bytes = tonumber(meta[3] or '0')
        local lineage = false
        if ARGV[#ARGV] == '1' then
          lineage = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)') or ''
        end
        if not epoch or (lineage and meta[4] ~= lineage) then
          if not epoch then bytes = 0 end
          epoch = ARGV[#ARGV - 3]
          local base = 0
          if redis.call('EXISTS', KEYS[2]) == 1 then
            local info = redis.call('XINFO', 'STREAM', KEYS[2])
            for i = 1, #info, 2 do
              if info[i] == 'last-generated-id' then base = tonumber(string.match(info[i + 1], '^(%d+)')) end
            end
          end
          if base > seq or not meta[1] then seq = base end
          redis.call('HSET', KEYS[1], 'epoch', epoch, 'seq', seq, 'bytes', bytes)
          if lineage then redis.call('HSET', KEYS[1], 'r', lineage) end
        end
        local held = redis.call('XLEN', KEYS[2])
        local result = {tonumber(epoch)}
        local accepted = 0
        for i = 0, n - 1 do
          local size = tonumber(ARGV[3 * i + 3])
          if held >= capacity or size > byteCapacity - bytes then
            result[i + 2] = 0
          else
            seq = seq + 1
            held = held + 1
            bytes = bytes + size
            accepted = accepted + 1
            redis.call('XADD', KEYS[2], seq .. '-0', 't', ARGV[3 * i + 1], 'd', ARGV[3 * i + 2], 'e', epoch)
            result[i + 2] = seq
          end
        end
        if accepted > 0 then
          redis.call('HSET', KEYS[1], 'seq', seq, 'bytes', bytes)
          redis.call(ARGV[#ARGV - 1], ARGV[#ARGV - 2], epoch .. ':' .. seq)
        end
        return result
        """)

    /// KEYS: meta, stream. ARGV: the epoch the seqs were numbered in (0: any), then the seqs
    /// acknowledged, any order. Deletes those stored in that epoch and gives their bytes back to
    /// the bound; returns how many it deleted. Each entry is checked against its own epoch (its
    /// `e` field; the principal's current one when it has none), so that an ack never deletes
    /// another push of the same number (a principal the store lost and numbers anew), while the
    /// pushes left from an epoch that ended (after a failover, see ``produce``) can still be
    /// acknowledged in theirs.
    ///
    /// Acks usually cover the oldest entries: one `XRANGE` from the stream's start reads them (and
    /// their sizes) and one `XTRIM MINID` drops them by whole stream nodes. Deleting an entry by id
    /// (`XRANGE id id`, `XDEL`) scans its node from the start, so only seqs past an unacknowledged
    /// one take that path.
    static let acknowledge = RedisScript(
        """
        local wanted = ARGV[1]
        local current = nil
        if wanted ~= '0' then current = redis.call('HGET', KEYS[1], 'epoch') end
        local function ofEpoch(fields)
          if wanted == '0' then return true end
          for j = 1, #fields, 2 do
            if fields[j] == 'e' then return fields[j + 1] == wanted end
          end
          return current == wanted
        end
        local acked = {}
        local high = 0
        for i = 2, #ARGV do
          local seq = tonumber(ARGV[i])
          acked[seq] = true
          if seq > high then high = seq end
        end
        local function size(fields)
          local total = 0
          for j = 1, #fields, 2 do
            if fields[j] == 't' or fields[j] == 'd' then total = total + string.len(fields[j + 1]) end
          end
          return total
        end
        local freed = 0
        local removed = 0
        local trimmed = 0
        for _, entry in ipairs(redis.call('XRANGE', KEYS[2], '-', high .. '-0', 'COUNT', #ARGV - 1)) do
          local seq = tonumber(string.match(entry[1], '^(%d+)'))
          if not acked[seq] or not ofEpoch(entry[2]) then break end
          acked[seq] = nil
          freed = freed + size(entry[2])
          trimmed = seq
        end
        if trimmed > 0 then removed = redis.call('XTRIM', KEYS[2], 'MINID', (trimmed + 1) .. '-0') end
        for seq in pairs(acked) do
          local id = seq .. '-0'
          local entry = redis.call('XRANGE', KEYS[2], id, id)
          if #entry == 1 and ofEpoch(entry[1][2]) then
            freed = freed + size(entry[1][2])
            removed = removed + redis.call('XDEL', KEYS[2], id)
          end
        end
        if freed > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
          if redis.call('HINCRBY', KEYS[1], 'bytes', -freed) < 0 then redis.call('HSET', KEYS[1], 'bytes', 0) end
        end
        return removed
        """)

    /// KEYS: the session record. ARGV: the client id, the record's lifetime in milliseconds, the
    /// principal's channel, the publish command. Records `<Redis time in µs>:<client id>` and tells the servers in one
    /// step, so that no server can read the record without the notice having been sent.
    static let announceSession = RedisScript(
        """
        local now = redis.call('TIME')
        redis.call('SET', KEYS[1], now[1] .. string.format('%06d', tonumber(now[2])) .. ':' .. ARGV[1], 'PX', ARGV[2])
        return redis.call(ARGV[4], ARGV[3], 's:' .. ARGV[1])
        """)
}

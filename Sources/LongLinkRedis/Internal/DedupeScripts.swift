/// The compare-and-set scripts of ``RedisDedupeStore``. Each touches entries of one hash tag (one
/// slot) and the keys that account for them.
///
/// The batch scripts (``claimAll``, ``finishAll``) act on every entry of a batch of one hash tag,
/// each exactly as if alone, so that one call serves the batch: an entry Redis refuses (a key of
/// another type, a write refused at the memory limit) gets its own error reply in the result and
/// leaves the others alone.
///
/// **Budgets.** Every entry a script writes is charged to its tag (a principal, or every
/// connection without a login) and to its client: one entry and its bytes (its name and value, see
/// ``DedupeEntryKey/charge(_:)``). The tag's index (a sorted set of `<charge>:<client>:<request>`
/// by expiry) is the truth; its accounts hash (`n`, `b`, `n:<client>`, `b:<client>`) sums it and
/// moves only with it, so that the two never drift.
///
/// At a bound the client gives up its own oldest finished entries (a reply, or `N`), never
/// anyone else's and never a running claim, as the server's in-memory window does: each client
/// has a sorted set `<tag>:df:<client>` of its finished entries' index names by expiry (a reply's
/// expiry is its finish plus the window, so oldest first), pruned of expired names before it is
/// read and expiring with its last one. Only when all of them would not make room is a claim
/// refused (`B...`, nothing given up) or a reply stored as `N` (not kept).
enum DedupeScripts {
    /// Shared by the scripts that account: the Redis time, the accounts' cache (one `HMGET` per
    /// client), and the pruning of expired index names (each leaves once, so it costs one step per
    /// entry ever written). The index and the accounts expire with the last entry they count: a
    /// call that removed an entry before its expiry sets theirs from the index's last; one that
    /// only added entries extends it when one of them outlasts it (a claim, shorter than the
    /// replies held, does not: one `PTTL`); a call that changed nothing of the index, a read,
    /// writes nothing.
    /// Expects the locals `accounts`, `index` and `limits` (the tag's entries and bytes, then a
    /// client's).
    private static let accounting = """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local held, dirty, latest, fresh, dropped = {}, {}, 0, false, false
        -- The tag's and a client's accounts, read in one HMGET when first needed.
        local function prefetch(client)
          local wanted = {}
          for _, field in ipairs({'n', 'b', 'n:' .. client, 'b:' .. client}) do
            if held[field] == nil then wanted[#wanted + 1] = field end
          end
          if #wanted == 0 then return end
          local values = redis.call('HMGET', accounts, unpack(wanted))
          for i, field in ipairs(wanted) do
            held[field] = tonumber(values[i]) or 0
            -- No entry counted: the hash is made anew by this call and needs its expiry.
            if field == 'n' and held[field] == 0 then fresh = true end
          end
        end
        local function usage(field)
          local value = held[field]
          if value == nil then
            value = tonumber(redis.call('HGET', accounts, field)) or 0
            held[field] = value
          end
          return value
        end
        local function add(client, count, bytes)
          prefetch(client)
          for field, delta in pairs({n = count, b = bytes, ['n:' .. client] = count, ['b:' .. client] = bytes}) do
            held[field] = usage(field) + delta
            dirty[field] = true
          end
        end
        local function parse(indexed)
          local charge, client = string.match(indexed, '^(%d+):([^:]*):')
          return tonumber(charge), client
        end
        local function drop(indexed)
          if redis.call('ZREM', index, indexed) == 1 then
            dropped = true
            local charge, client = parse(indexed)
            add(client, -1, -charge)
          end
        end
        local function keep(indexed, expiry)
          if expiry > latest then latest = expiry end
          if redis.call('ZADD', index, expiry, indexed) == 1 then
            local charge, client = parse(indexed)
            add(client, 1, charge)
          end
        end
        local expired = redis.call('ZRANGEBYSCORE', index, '-inf', now)
        for _, indexed in ipairs(expired) do
          local charge, client = parse(indexed)
          add(client, -1, -charge)
        end
        if #expired > 0 then
          redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
        end
        local function clientOf(member) return string.match(member, '^([^:]*):') end
        local tag = string.sub(index, 1, -4)
        -- The client's finished entries by expiry, pruned of the expired ones.
        local function finishedOf(client)
          local order = tag .. ':df:' .. client
          redis.call('ZREMRANGEBYSCORE', order, '-inf', now)
          return order
        end
        -- Per client, for this call: its order pruned once, its size, and its oldest names read
        -- ahead (`taken` of them given up so far), so that a batch at a bound reads them once.
        local rooms = {}
        local function roomOf(client)
          local room = rooms[client]
          if room == nil then
            local order = finishedOf(client)
            room = {order = order, card = redis.call('ZCARD', order), ahead = {}, taken = 0}
            rooms[client] = room
          end
          return room
        end
        -- The clients' finished orders written by this call, with the latest expiry added to each:
        -- their own expiries follow in `save`, once per client.
        local orders = {}
        local function finished(indexed, expiry)
          local client = select(2, parse(indexed))
          local order = tag .. ':df:' .. client
          local added = redis.call('ZADD', order, expiry, indexed)
          if (orders[order] or 0) < expiry then orders[order] = expiry end
          local room = rooms[client]
          if room then
            -- A name of any expiry may have come in among those read ahead: read them again.
            room.card, room.ahead, room.taken = room.card + added, {}, 0
          end
        end
        -- Gives up the client's own oldest finished entries, as many as `count` more entries and
        -- `bytes` more bytes take to fit every bound; false, giving up nothing, when all of them
        -- would not make room.
        local function makeRoom(client, count, bytes)
          local entries, size = 0, 0
          if count > 0 then
            entries = math.max(usage('n') + count - limits[1], usage('n:' .. client) + count - limits[3])
          end
          if bytes > 0 then
            size = math.max(usage('b') + bytes - limits[2], usage('b:' .. client) + bytes - limits[4])
          end
          if entries <= 0 and size <= 0 then return true end
          local room = roomOf(client)
          if entries > room.card or size > usage('b:' .. client) then return false end
          -- Read ahead in steps: at a bound it is almost always one entry per claim. The names
          -- read ahead and not given up hold the order's first ranks, so the next step reads after them.
          local victims, freed, at, ahead = {}, 0, room.taken, room.ahead
          while #victims < entries or freed < size do
            if at >= #ahead then
              local from = #ahead - room.taken
              local batch = redis.call('ZRANGE', room.order, from, from + math.max(entries - #victims, 16) - 1)
              if #batch == 0 then return false end
              for _, indexed in ipairs(batch) do ahead[#ahead + 1] = indexed end
            end
            at = at + 1
            victims[#victims + 1] = ahead[at]
            freed = freed + parse(ahead[at])
          end
          for _, indexed in ipairs(victims) do
            redis.call('DEL', tag .. ':d:' .. string.match(indexed, '^%d+:(.*)$'))
            redis.call('ZREM', room.order, indexed)
            drop(indexed)
          end
          room.taken, room.card = at, room.card - #victims
          return true
        end
        local function refusal(client, count, bytes)
          prefetch(client)
          local scope
          if count > 0 and usage('n') + count > limits[1] then scope = 'tn'
          elseif bytes > 0 and usage('b') + bytes > limits[2] then scope = 'tb'
          elseif count > 0 and usage('n:' .. client) + count > limits[3] then scope = 'cn'
          elseif bytes > 0 and usage('b:' .. client) + bytes > limits[4] then scope = 'cb'
          else return nil end
          if makeRoom(client, count, bytes) then return nil end
          local oldest = redis.call('ZRANGE', index, 0, 0, 'WITHSCORES')
          local wait = oldest[2] and math.max(1, tonumber(oldest[2]) - now) or 1
          return 'B' .. scope .. ' ' .. wait
        end
        local function claim(key, member, value, term)
          local found = redis.pcall('GET', key)
          if found then return found end
          local charge = #key + #value
          local refused = refusal(clientOf(member), 1, charge)
          if refused then return refused end
          local stored = redis.pcall('SET', key, value, 'PX', term)
          if type(stored) == 'table' and stored.err then return stored end
          keep(charge .. ':' .. member, now + tonumber(term))
          return false
        end
        local function save()
          -- A client's order lasts until its latest entry expires (`now + ttl` is at most its expiry).
          for order, expiry in pairs(orders) do
            local ttl = redis.call('PTTL', order)
            local at = math.floor(expiry) + 1
            if ttl < 0 or now + ttl < at then redis.call('PEXPIREAT', order, at) end
          end
          local sets = {}
          for field in pairs(dirty) do
            if held[field] > 0 then
              sets[#sets + 1] = field
              sets[#sets + 1] = held[field]
            else
              redis.call('HDEL', accounts, field)
            end
          end
          if #sets > 0 then redis.call('HSET', accounts, unpack(sets)) end
          if dropped then
            -- An entry left before its expiry: the index and the accounts follow the last one left.
            local last = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
            if last[2] then
              local at = math.floor(tonumber(last[2])) + 1
              redis.call('PEXPIREAT', index, at)
              redis.call('PEXPIREAT', accounts, at)
            end
            return
          end
          if latest == 0 and not fresh then return end
          -- Only added to (or pruned of expired names, which never moves the last): extended when
          -- an entry outlasts them. `now` is the script's start, so `now + ttl` is at most the
          -- current expiry.
          local ttl = redis.call('PTTL', index)
          local at = math.floor(latest) + 1
          if ttl >= 0 and now + ttl >= at then
            if fresh then redis.call('PEXPIREAT', accounts, now + ttl) end
          elseif latest > 0 then
            redis.call('PEXPIREAT', index, at)
            redis.call('PEXPIREAT', accounts, at)
          end
        end
        """

    /// KEYS: the tag's accounts and index, then its entries. ARGV: the owner's running value, the
    /// four limits, then each entry's claim term in ms and its member. Per entry: returns what it
    /// holds (running, `D<reply>`, `N`, `U` or `UL`), else claims it for its term and returns `''`,
    /// giving up the client's own oldest finished entries if a bound takes it, or returns
    /// `B<scope> <ms>` when even all of them would not make room (scope `tn`, `tb`, `cn` or `cb`:
    /// the tag's or the client's entries or bytes; ms: until the tag's oldest entry expires), or
    /// its error.
    static let claimAll = RedisScript(
        """
        local accounts, index = KEYS[1], KEYS[2]
        local limits = {tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])}
        \(accounting)
        local result = {}
        for i = 1, #KEYS - 2 do
          result[i] = claim(KEYS[i + 2], ARGV[2 * i + 5], ARGV[1], ARGV[2 * i + 4]) or ''
        end
        save()
        return result
        """)

    /// ``claimAll`` on a cluster with asynchronous replication, where a failover may lose the last
    /// writes: a stored reply or a claim, after which a copy of the request would run again.
    ///
    /// KEYS: the lineage record of the entries' slot, the tag's accounts and index, then the
    /// entries. ARGV: the owner's running value, the de-dup window in ms, the four limits, then
    /// each entry's claim term in ms, whether the request is a copy (`1`: `Request.resent`, else
    /// `0`) and its member. The record holds the replication id (`master_replid`) the slot's
    /// entries were written under (`r`) and the Redis time in ms at which a script last saw it
    /// change (`t`). Another id (a replica promoted, a slot moved, a node restarted) or no record
    /// at all (it never expires, so its loss is a sign of lost writes) counts as a change at this
    /// moment. While the last change is less than a window old, a copy that finds no entry may
    /// have lost it: the entry is set to `UL` for the window and returned (the caller answers
    /// `UNKNOWN`, and so does every later copy, which finds it; a server that knows only `U`
    /// reads it as `U`). Other entries are claimed as ``claimAll`` claims them.
    static let claimAllChecked = RedisScript(
        """
        local accounts, index = KEYS[2], KEYS[3]
        local limits = {tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])}
        \(accounting)
        local id = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)') or ''
        local window = tonumber(ARGV[2])
        local record = redis.call('HMGET', KEYS[1], 'r', 't')
        local changed = tonumber(record[2])
        if record[1] ~= id or not changed then
          changed = now
          redis.call('HSET', KEYS[1], 'r', id, 't', changed)
        end
        local recent = now - changed < window
        local result = {}
        for i = 1, #KEYS - 3 do
          local key, member = KEYS[i + 3], ARGV[3 * i + 6]
          if recent and ARGV[3 * i + 5] == '1' then
            result[i] = claim(key, member, 'UL', window) or 'UL'
          else
            result[i] = claim(key, member, ARGV[1], ARGV[3 * i + 4]) or ''
          end
        end
        save()
        return result
        """)

    /// KEYS: the tag's accounts and index, then its entries. ARGV: the owner's running value, the
    /// publish command (`PUBLISH`, or `SPUBLISH` on a cluster), the four limits, then each entry's
    /// reply value, window in ms and member. Per entry: the reply is stored for the window and
    /// `finished` published on `<entry>:n` only while the entry holds the running value (a claim
    /// that lapsed is another server's or marked `UNKNOWN`); a reply whose bytes would pass a byte
    /// bound gives up the client's own oldest finished entries, or when even all of them would not
    /// make room is stored as `N` (not kept) instead. Returns 1 (stored), 2 (stored as `N`), 0 or an
    /// error per entry.
    static let finishAll = RedisScript(
        """
        local accounts, index = KEYS[1], KEYS[2]
        local limits = {tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])}
        \(accounting)
        local result = {}
        for i = 1, #KEYS - 2 do
          local key, value, window, member = KEYS[i + 2], ARGV[3 * i + 4], ARGV[3 * i + 5], ARGV[3 * i + 6]
          local found = redis.pcall('GET', key)
          if found ~= ARGV[1] then
            result[i] = type(found) == 'table' and found or 0
          else
            local claimed = #key + #ARGV[1]
            local kept = 1
            if refusal(clientOf(member), 0, #key + #value - claimed) then
              value, kept = 'N', 2
            end
            local stored = redis.pcall('SET', key, value, 'PX', window)
            if type(stored) == 'table' and stored.err then
              result[i] = stored
            else
              drop(claimed .. ':' .. member)
              keep((#key + #value) .. ':' .. member, now + tonumber(window))
              finished((#key + #value) .. ':' .. member, now + tonumber(window))
              redis.call(ARGV[2], key .. ':n', 'finished')
              result[i] = kept
            end
          end
        end
        save()
        return result
        """)

    /// KEYS: the tag's accounts and index, the entry. ARGV: the owner's running value, the notice
    /// channel, the publish command, the entry's member.
    static let abandon = RedisScript(
        """
        local accounts, index = KEYS[1], KEYS[2]
        local limits = {}
        \(accounting)
        local given = 0
        if redis.call('GET', KEYS[3]) == ARGV[1] then
          redis.call('DEL', KEYS[3])
          drop((#KEYS[3] + #ARGV[1]) .. ':' .. ARGV[4])
          redis.call(ARGV[3], ARGV[2], 'abandoned')
          given = 1
        end
        save()
        return given
        """)

    /// KEYS: the tag's accounts and index, the entry. ARGV: the owner's running value, the claim's
    /// term in ms, the entry's member. The index follows the claim's expiry, so that the claim
    /// stays charged while it runs.
    static let renew = RedisScript(
        """
        local accounts, index = KEYS[1], KEYS[2]
        local limits = {}
        \(accounting)
        local renewed = 0
        if redis.call('GET', KEYS[3]) == ARGV[1] then
          redis.call('PEXPIRE', KEYS[3], ARGV[2])
          redis.call('ZADD', index, 'XX', now + tonumber(ARGV[2]), (#KEYS[3] + #ARGV[1]) .. ':' .. ARGV[3])
          latest = now + tonumber(ARGV[2])
          renewed = 1
        end
        save()
        return renewed
        """)

    /// KEYS: entry. ARGV: the dead owner's running value, the notice channel, the publish command.
    /// The entry keeps its time to live: a resend within its caller's deadline still finds it and
    /// is not run. It stays charged as the claim was, until then.
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

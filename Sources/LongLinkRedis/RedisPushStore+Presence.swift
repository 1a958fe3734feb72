internal import LongLinkCore
public import LongLinkServer
internal import LongLinkWire

/// The fleet's presence: every server's sessions of each principal, in one sorted set per
/// principal (`<prefix>{p:<principal>}:presence`, in the principal's slot on a cluster), each
/// session scored by when its lease ends in Redis's time.
extension RedisPushStore {
    /// True: the servers sharing this store write their sessions here, and ask here.
    public var sharesPresence: Bool { true }

    /// The most keys one presence script call writes: a renewal of many principals is split into
    /// calls that each hold Redis briefly (and, on a cluster, into one call per slot), pipelined.
    static let presenceKeysPerCall = 256

    /// Adds or renews the update's present sessions (until its lease passes, by Redis's clock) and
    /// removes its absent ones, in one pipelined round of script calls: one per slot on a cluster,
    /// one per ``presenceKeysPerCall`` principals on one Redis. Throws
    /// ``LongLinkError/Code-swift.struct/unavailable`` when Redis does not answer.
    public func updatePresence(_ update: PresenceUpdate) async throws(LongLinkError) {
        var sessions: [PrincipalKey: (present: [UInt64], absent: [UInt64])] = [:]
        for session in update.present {
            sessions[PrincipalKey(session.principal), default: ([], [])].present.append(session.connectionID)
        }
        for session in update.absent {
            sessions[PrincipalKey(session.principal), default: ([], [])].absent.append(session.connectionID)
        }
        guard !sessions.isEmpty else { return }
        var groups: [Int: [(key: [UInt8], present: [UInt64], absent: [UInt64])]] = [:]
        for (principal, ids) in sessions {
            let key = Array(keys.presence(principal: principal.name).utf8)
            groups[backend.isCluster ? ClusterSlot.of(key) : 0, default: []].append((key, ids.present, ids.absent))
        }
        let head = [
            Array(String(max(1, update.lease.wireMilliseconds)).utf8),
            Array("\(update.serverID)/\(update.instance)/".utf8),
        ]
        var calls: [(script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]])] = []
        for group in groups.values {
            var start = 0
            while start < group.count {
                let part = group[start..<min(start + Self.presenceKeysPerCall, group.count)]
                var arguments = head
                for entry in part {
                    arguments += [Array(String(entry.present.count).utf8), Array(String(entry.absent.count).utf8)]
                    arguments += (entry.present + entry.absent).map { Array(String($0).utf8) }
                }
                calls.append((PresenceScripts.update, part.map(\.key), arguments))
                start += part.count
            }
        }
        for reply in try await client.send(scripts: calls) { _ = try reply.checked("the presence script") }
    }

    /// `principal`'s sessions on every server whose lease has not passed, at most
    /// ``LongLinkServer/Presence/listLimit`` listed: one script call (its expired sessions pruned,
    /// then `ZCARD` and `ZRANGE`). Throws ``LongLinkError/Code-swift.struct/unavailable`` when Redis
    /// does not answer.
    public func presence(of principal: String) async throws(LongLinkError) -> Presence? {
        let reply = try await client.run(
            PresenceScripts.read, keys: [Array(keys.presence(principal: principal).utf8)],
            arguments: [Array(String(Presence.listLimit).utf8)])
        guard let parts = reply.elements, parts.count == 2, let count = parts[0].int64,
            let members = parts[1].elements
        else { throw .redisUnexpected("the presence script", reply) }
        return Presence(principal: principal, count: Int(count), sessions: members.compactMap { Self.session($0) })
    }

    /// A presence member `<serverID>/<instance>/<connection id>` as a session, or nil when it is
    /// not one (the server id may itself hold `/`: the last two fields are read from the end).
    static func session(_ member: RESPValue) -> Presence.Session? {
        guard let bytes = member.bytes, let last = bytes.lastIndex(of: UInt8(ascii: "/")),
            let connectionID = UInt64(String(decoding: bytes[(last + 1)...], as: UTF8.self)),
            let instance = bytes[..<last].lastIndex(of: UInt8(ascii: "/"))
        else { return nil }
        return Presence.Session(
            serverID: String(decoding: bytes[..<instance], as: UTF8.self), connectionID: connectionID)
    }
}

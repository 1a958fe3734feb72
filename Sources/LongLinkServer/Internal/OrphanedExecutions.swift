internal import LongLinkWire

/// The de-duplicated executions whose connection closed while they ran, kept so that the client's
/// resend after reconnecting can join them instead of running the handler twice.
///
/// A pure value with two bounds: per client (``maxPerClient``) and in all (``maxTotal``). An
/// execution refused at either bound is stopped by the caller at once, so that "send, disconnect,
/// repeat" cannot pile up handlers; an admitted one still ends at its request's deadline, or when
/// it finishes. Client ids are counted by their bytes, as the server compares them everywhere (see
/// ``DedupeKey``).
struct OrphanedExecutions<Key: Hashable, Handle> {
    let maxPerClient: Int
    let maxTotal: Int
    private var entries: [Key: (client: String, handle: Handle)] = [:]
    private var perClient: [PrincipalKey: Int] = [:]

    init(maxPerClient: Int, maxTotal: Int) {
        self.maxPerClient = maxPerClient
        self.maxTotal = maxTotal
    }

    /// Orphaned executions held.
    var count: Int { entries.count }

    /// Orphaned executions held for `client`.
    func count(of client: String) -> Int { perClient[PrincipalKey(client)] ?? 0 }

    /// Keeps `handle` for the execution `key` of `client`. Returns false at a bound: the caller
    /// stops the execution.
    mutating func adopt(_ key: Key, client: String, handle: Handle) -> Bool {
        guard entries[key] == nil else { return true }
        guard entries.count < maxTotal, count(of: client) < maxPerClient else { return false }
        entries[key] = (client, handle)
        perClient[PrincipalKey(client), default: 0] += 1
        return true
    }

    /// The execution finished, timed out or was stopped: forgets it and returns its handle (nil
    /// when it was not orphaned).
    mutating func remove(_ key: Key) -> Handle? {
        guard let (client, handle) = entries.removeValue(forKey: key) else { return nil }
        let left = (perClient[PrincipalKey(client)] ?? 1) - 1
        perClient[PrincipalKey(client)] = left > 0 ? left : nil
        return handle
    }

    /// Forgets every orphan and returns their handles (the server shuts down).
    mutating func removeAll() -> [Handle] {
        defer {
            entries.removeAll()
            perClient.removeAll()
        }
        return entries.values.map(\.handle)
    }
}

extension OrphanedExecutions: Sendable where Key: Sendable, Handle: Sendable {}

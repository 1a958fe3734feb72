internal import LongLinkWire

/// Which primary serves each hash slot, and its replicas, as `CLUSTER SHARDS` describes the cluster.
///
/// A value: the client replaces it whole after each refresh. Built only from a reply that holds
/// together (slot ranges inside 0..<16384 that do not overlap, valid ports); anything else is a
/// typed `protocolViolation`, never a crash.
struct ClusterTopology: Sendable, Equatable {
    /// One node of the cluster.
    struct Node: Sendable, Hashable, CustomStringConvertible {
        var id: String
        var host: String
        var port: Int
        var isHealthy: Bool

        var address: Address { Address(host: host, port: port) }
        var description: String { "\(host):\(port)" }
    }

    /// Where a node listens: what connections are keyed by.
    struct Address: Sendable, Hashable, CustomStringConvertible {
        var host: String
        var port: Int

        var description: String { "\(host):\(port)" }
    }

    /// A primary, its replicas and the slots it serves.
    struct Shard: Sendable, Equatable {
        var slots: [ClosedRange<Int>]
        var primary: Node
        var replicas: [Node]
    }

    /// The shards that serve slots.
    let shards: [Shard]
    /// For each slot, the index of its shard in ``shards``, or -1 when no primary serves it.
    private let owners: [Int16]

    /// The primary of `slot`, or nil when none serves it (the cluster is down for that slot).
    func primary(forSlot slot: Int) -> Node? {
        guard (0..<ClusterSlot.count).contains(slot) else { return nil }
        let owner = owners[slot]
        return owner < 0 ? nil : shards[Int(owner)].primary
    }

    /// The topology with `slot` served by the primary at `address`, as a `MOVED` reply says, until
    /// the next refresh confirms it; nil when that address is no known primary.
    func moving(slot: Int, to address: Address) -> ClusterTopology? {
        guard (0..<ClusterSlot.count).contains(slot),
            let shard = shards.firstIndex(where: { $0.primary.address == address })
        else { return nil }
        var owners = owners
        owners[slot] = Int16(shard)
        return ClusterTopology(shards: shards, owners: owners)
    }

    /// Every primary's address.
    var primaries: [Address] { shards.map(\.primary.address) }

    private init(shards: [Shard], owners: [Int16]) {
        self.shards = shards
        self.owners = owners
    }

    /// Parses a `CLUSTER SHARDS` reply: an array of shards, each a map (RESP3) or a flat array of
    /// key-value pairs (RESP2) with `slots` (start, end pairs) and `nodes` (each a map or flat
    /// array with `id`, `endpoint` or `ip`, `port`, `role` and `health`). Shards without slots
    /// or without a primary serve nothing and are left out.
    init(shardsReply reply: RESPValue) throws(LongLinkError) {
        guard let entries = reply.elements else { throw Self.bad("the reply is not an array") }
        var shards: [Shard] = []
        var owners = [Int16](repeating: -1, count: ClusterSlot.count)
        for entry in entries {
            let fields = try Self.fields(of: entry, what: "a shard")
            guard let slotValues = fields["slots"]?.elements, slotValues.count.isMultiple(of: 2) else {
                throw Self.bad("a shard's slots are not start, end pairs")
            }
            var slots: [ClosedRange<Int>] = []
            for pair in stride(from: 0, to: slotValues.count, by: 2) {
                guard let start = slotValues[pair].int64, let end = slotValues[pair + 1].int64,
                    0 <= start, start <= end, end < Int64(ClusterSlot.count)
                else { throw Self.bad("a shard's slot range is outside 0...16383") }
                slots.append(Int(start)...Int(end))
            }
            guard let nodeValues = fields["nodes"]?.elements else { throw Self.bad("a shard has no node list") }
            var primaries: [Node] = []
            var replicas: [Node] = []
            for value in nodeValues {
                let (node, isPrimary) = try Self.node(value)
                if isPrimary { primaries.append(node) } else { replicas.append(node) }
            }
            // During a failover the old primary may still be listed, failed, beside the new one.
            guard !slots.isEmpty, let primary = primaries.first(where: \.isHealthy) ?? primaries.first else {
                continue
            }
            let index = Int16(shards.count)
            for range in slots {
                for slot in range {
                    guard owners[slot] < 0 else { throw Self.bad("slot \(slot) is claimed by two shards") }
                    owners[slot] = index
                }
            }
            shards.append(Shard(slots: slots, primary: primary, replicas: replicas))
        }
        self.shards = shards
        self.owners = owners
    }

    private static func node(_ value: RESPValue) throws(LongLinkError) -> (Node, isPrimary: Bool) {
        let fields = try fields(of: value, what: "a node")
        guard let id = fields["id"]?.string, let role = fields["role"]?.string else {
            throw bad("a node has no id or role")
        }
        guard let port = fields["port"]?.int64, (1...65535).contains(port) else {
            throw bad("node \(id) has no valid port")
        }
        // `endpoint` is what clients should use; `?` or empty means unknown, then `ip`.
        let endpoint = fields["endpoint"]?.string.flatMap { $0.isEmpty || $0 == "?" ? nil : $0 }
        guard let host = endpoint ?? fields["ip"]?.string, !host.isEmpty else {
            throw bad("node \(id) has no endpoint or ip")
        }
        let node = Node(id: id, host: host, port: Int(port), isHealthy: fields["health"]?.string == "online")
        return (node, role == "master" || role == "primary")
    }

    /// The fields of a map, or of a RESP2 flat array of name, value pairs; later names win.
    private static func fields(of value: RESPValue, what: String) throws(LongLinkError) -> [String: RESPValue] {
        var fields: [String: RESPValue] = [:]
        if case .map(let pairs) = value.unattributed {
            for pair in pairs {
                guard let name = pair.key.string else { throw bad("\(what) has a field name that is not a string") }
                fields[name] = pair.value
            }
            return fields
        }
        guard let flat = value.elements, flat.count.isMultiple(of: 2) else {
            throw bad("\(what) is neither a map nor name, value pairs")
        }
        for index in stride(from: 0, to: flat.count, by: 2) {
            guard let name = flat[index].string else { throw bad("\(what) has a field name that is not a string") }
            fields[name] = flat[index + 1]
        }
        return fields
    }

    private static func bad(_ reason: String) -> LongLinkError {
        LongLinkError(code: .protocolViolation, message: "bad CLUSTER SHARDS reply from Redis: \(reason)")
    }
}

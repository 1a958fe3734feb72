/// One line of `CLUSTER NODES`: a node's id, port, role and slot ranges, as ``LocalRedisCluster``
/// needs them to find a slot's primary and its replicas.
package struct ClusterNodesEntry: Sendable, Equatable {
    /// The node's id.
    package var id: String
    /// Its client port.
    package var port: Int
    /// Whether it is a primary (`master`).
    package var isPrimary: Bool
    /// Whether the cluster marks it failed (`fail`, or `fail?` as seen by this node).
    package var failed: Bool
    /// Its primary's id when it is a replica; nil for a primary.
    package var primaryID: String?
    /// The slots it serves (a primary's).
    package var slots: [ClosedRange<Int>]

    /// Whether it serves `slot`.
    package func serves(_ slot: Int) -> Bool { slots.contains { $0.contains(slot) } }

    /// The entries of a `CLUSTER NODES` reply; lines that do not parse are left out.
    package static func parse(_ text: String) -> [ClusterNodesEntry] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 8 else { return nil }
            // ip:port@busport[,hostname]
            let address = fields[1].split(separator: "@").first ?? ""
            guard let portText = address.split(separator: ":").last, let port = Int(portText) else { return nil }
            let flags = fields[2].split(separator: ",")
            let slots = fields.dropFirst(8).compactMap { field -> ClosedRange<Int>? in
                // Importing and migrating slots ([slot-<-id], [slot->-id]) are not served yet or still.
                guard !field.hasPrefix("[") else { return nil }
                let bounds = field.split(separator: "-").compactMap { Int($0) }
                switch bounds.count {
                case 1: return bounds[0]...bounds[0]
                case 2 where bounds[0] <= bounds[1]: return bounds[0]...bounds[1]
                default: return nil
                }
            }
            return ClusterNodesEntry(
                id: fields[0], port: port, isPrimary: flags.contains("master"),
                failed: flags.contains("fail") || flags.contains("fail?"),
                primaryID: fields[3] == "-" ? nil : fields[3], slots: slots)
        }
    }
}

internal import LongLinkServer
internal import LongLinkTransport

/// Group commit: the claims (or stored replies) queued in one turn (see ``DedupeQueue``) leave in
/// one pipelined write, one script call per hash tag.
extension RedisDedupeStore {
    /// Sends `batch` and resumes every item's outcome with its entry's reply or the batch's error;
    /// returns the number of script calls, also told to `sending` before the round trip. Entries of
    /// one hash tag go to one script call: Redis Cluster runs a script only on keys of one slot.
    @discardableResult
    static func sendBatch(
        _ batch: [DedupeOperation], backend: RedisBackend, running: String,
        budgets: RedisDedupeBudgets = RedisDedupeBudgets(), sending: (Int) -> Void = { _ in }
    ) async -> Int {
        var groups: [[DedupeOperation]] = []
        var groupOf: [GroupKey: Int] = [:]
        for item in batch {
            let key = GroupKey(
                tag: Array(ClusterSlot.hashTag(of: Array(item.entry.name.utf8))), isClaim: item.operation.isClaim,
                isChecked: item.operation.lineage != nil)
            if let index = groupOf[key] {
                groups[index].append(item)
            } else {
                groupOf[key] = groups.count
                groups.append([item])
            }
        }
        let running = Array(running.utf8)
        let calls = groups.map { group in
            // The tag's accounts and index, then its entries (see `DedupeScripts`).
            let first = group[0].entry
            var keys = [first.accounts, first.index].map { Array($0.utf8) } + group.map { Array($0.entry.name.utf8) }
            var arguments = group[0].operation.isClaim ? [running] : [running, backend.publish]
            var script = group[0].operation.isClaim ? DedupeScripts.claimAll : DedupeScripts.finishAll
            if let lineage = group[0].operation.lineage {
                // One record per slot; the longest window asked keeps every entry's copies safe.
                script = DedupeScripts.claimAllChecked
                keys.insert(Array(lineage.record.utf8), at: 0)
                let window = group.map { $0.operation.lineage?.window ?? 0 }.max() ?? lineage.window
                arguments.append(Array(String(window).utf8))
            }
            arguments += budgets.arguments(anonymous: first.isAnonymous)
            for item in group {
                switch item.operation {
                case .claim(let term, let lineage):
                    arguments.append(Array(String(term).utf8))
                    if let lineage { arguments.append(lineage.resent ? [UInt8(ascii: "1")] : [UInt8(ascii: "0")]) }
                case .finish(let value, let window):
                    arguments.append(value)
                    arguments.append(Array(String(window).utf8))
                }
                arguments.append(Array(item.entry.member.utf8))
            }
            return (script: script, keys: keys, arguments: arguments)
        }
        sending(calls.count)
        let replies: [RESPValue]
        do throws(LongLinkError) {
            // Stored replies wait for the replicas the durability asks for; claims do not.
            let replicas = batch.first?.operation.isClaim == false ? backend.replicas : 0
            replies = try await backend.runner.send(scripts: calls, replicas: replicas)
        } catch {
            for item in batch { item.outcome.resume(.failure(error)) }
            return calls.count
        }
        for (group, reply) in zip(groups, replies) {
            let values: Result<[RESPValue], LongLinkError>
            do throws(LongLinkError) {
                let checked = try reply.checked("EVALSHA")
                guard let elements = checked.elements, elements.count == group.count else {
                    throw .redisUnexpected("EVALSHA", checked)
                }
                values = .success(elements)
            } catch {
                values = .failure(error)
            }
            for (index, item) in group.enumerated() {
                item.outcome.resume(
                    values.flatMap { elements in
                        Result { () throws(LongLinkError) in try elements[index].checked("EVALSHA") }
                    })
            }
        }
        return calls.count
    }

    /// Items share a script call when their keys share a hash tag and they ask the same.
    struct GroupKey: Hashable {
        /// Bytes, as Redis hashes them: two spellings of one name in Unicode are two tags.
        let tag: [UInt8]
        let isClaim: Bool
        /// A claim with a lineage check (``DedupeScripts/claimAllChecked``).
        let isChecked: Bool
    }
}

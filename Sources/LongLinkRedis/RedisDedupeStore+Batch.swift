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
        _ batch: [DedupeQueue.Item], client: RedisClient, running: String, sending: (Int) -> Void = { _ in }
    ) async -> Int {
        var groups: [[DedupeQueue.Item]] = []
        var groupOf: [GroupKey: Int] = [:]
        for item in batch {
            let key = GroupKey(tag: Self.hashTag(of: item.key), isClaim: item.operation.isClaim)
            if let index = groupOf[key] {
                groups[index].append(item)
            } else {
                groupOf[key] = groups.count
                groups.append([item])
            }
        }
        let running = Array(running.utf8)
        let calls = groups.map { group in
            let keys = group.map { Array($0.key.utf8) }
            var arguments = [running]
            for item in group {
                switch item.operation {
                case .claim(let term):
                    arguments.append(Array(String(term).utf8))
                case .finish(let value, let window):
                    arguments.append(value)
                    arguments.append(Array(String(window).utf8))
                }
            }
            return (
                script: group[0].operation.isClaim ? DedupeScripts.claimAll : DedupeScripts.finishAll,
                keys: keys, arguments: arguments
            )
        }
        sending(calls.count)
        let replies: [RESPValue]
        do throws(LongLinkError) {
            replies = try await client.send(scripts: calls)
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
    }

    /// The part of `key` Redis Cluster hashes: between the first `{` and the first `}` after it
    /// when that is not empty, else the whole key.
    static func hashTag(of key: String) -> [UInt8] {
        let bytes = Array(key.utf8)
        guard let open = bytes.firstIndex(of: UInt8(ascii: "{")) else { return bytes }
        let rest = bytes[(open + 1)...]
        guard let close = rest.firstIndex(of: UInt8(ascii: "}")), close != rest.startIndex else { return bytes }
        return Array(rest[..<close])
    }
}

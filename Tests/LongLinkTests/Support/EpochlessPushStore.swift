import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport

/// A push store of an app's own that does not number in epochs: every push goes out with epoch 0,
/// and each principal's seqs start at 1, so two principals' pushes share seq numbers.
final class EpochlessPushStore: PushStore {
    private let logs = Locked([String: (next: UInt64, pushes: [StoredPush])]())

    func append(principal: String, topic: String, payload: [UInt8]) throws(LongLinkError) -> StoredPush {
        logs.withLock { logs in
            var log = logs[principal] ?? (1, [])
            let push = StoredPush(seq: log.next, topic: topic, payload: payload, epoch: 0)
            log.next += 1
            log.pushes.append(push)
            logs[principal] = log
            return push
        }
    }

    func unacknowledged(principal: String, after seq: UInt64, limit: Int) -> [StoredPush] {
        logs.withLock { Array(($0[principal]?.pushes ?? []).filter { $0.seq > seq }.prefix(limit)) }
    }

    func acknowledge(principal: String, seqs: [UInt64]) {
        let acknowledged = Set(seqs)
        logs.withLock { $0[principal]?.pushes.removeAll { acknowledged.contains($0.seq) } }
    }

    func unacknowledgedCount(principal: String) -> Int {
        logs.withLock { $0[principal]?.pushes.count ?? 0 }
    }
}

import LongLinkCore
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport

/// A push store of an app's own that does not number in epochs: every push goes out with epoch 0,
/// and each principal's seqs start at 1, so two principals' pushes share seq numbers.
final class EpochlessPushStore: PushStore {
    private let logs = Locked([String: (next: UInt64, pushes: [StoredPush])]())

    func append(_ request: PushAppend) async throws(LongLinkError) -> StoredPush {
        logs.withLock { logs in
            var log = logs[request.principal] ?? (1, [])
            let push = StoredPush(seq: log.next, topic: request.topic, payload: request.payload, epoch: 0)
            log.next += 1
            log.pushes.append(push)
            logs[request.principal] = log
            return push
        }
    }

    func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] {
        logs.withLock { Array(($0[read.principal]?.pushes ?? []).filter { $0.seq > read.after }.prefix(read.limit)) }
    }

    func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) {
        let acknowledged = Set(acks.seqs)
        logs.withLock { $0[acks.principal]?.pushes.removeAll { acknowledged.contains($0.seq) } }
    }

    func unacknowledgedCount(principal: String) -> Int {
        logs.withLock { $0[principal]?.pushes.count ?? 0 }
    }
}

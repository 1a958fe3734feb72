import FuzzKit
import LongLinkServer

@testable import LongLinkRedis

/// The Redis push store's reading of replies: arbitrary bytes through the RESP3 parser, then every
/// value it yields as an `XRANGE` page, as one stream entry, as the produce script's reply, as a
/// `TIME` reply and as a session record.
///
/// Input: a header (how many pushes the produce call had), then the stream. Nothing may trap
/// whatever Redis (or something posing as it) answers; a reply read as pushes reads the same when
/// those pushes are written back as Redis would send them; a produce reply read as seqs has one
/// per push after an epoch above 0.
@_cdecl("LLVMFuzzerTestOneInput")
public func pushStoreRepliesFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let produced = input.int(below: 70)
    let stream = input.chunk()
    var parser = RESPParser(limits: RESPParser.Limits())
    parser.append(stream)
    while let value = try? parser.next() {
        if let page = RedisPushStore.pushes(fromPage: value) {
            let again = RedisPushStore.pushes(fromPage: .array(page.map(entry)))
            check(again == page, "a page written back reads otherwise: \(page) vs \(String(describing: again))")
        }
        if let push = RedisPushStore.push(from: value) {
            check(RedisPushStore.push(from: entry(push)) == push, "an entry written back reads otherwise: \(push)")
        }
        if let seqs = RedisPushStore.producedSeqs(value, count: produced) {
            check(seqs.count == produced + 1 && seqs[0] > 0, "a produce reply read wrong: \(seqs)")
        }
        if let now = RedisPushStore.microseconds(fromTime: value) {
            check(now >= 0, "a TIME reply read as a negative time: \(now)")
        }
        if let record = RedisPushStore.sessionRecord(of: "p", value, now: 1 << 50) {
            check(record.age >= .zero, "a session record read with a negative age: \(record)")
        }
    }
    return 0
}

/// A push as `XRANGE` answers it: `[<seq>-0, [t, topic, d, payload, e, epoch]]`.
private func entry(_ push: StoredPush) -> RESPValue {
    .array([
        .bulkString(Array("\(push.seq)-0".utf8)),
        .array([
            .bulkString(Array("t".utf8)), .bulkString(Array(push.topic.utf8)),
            .bulkString(Array("d".utf8)), .bulkString(push.payload),
            .bulkString(Array("e".utf8)), .bulkString(Array(String(push.epoch).utf8)),
        ]),
    ])
}

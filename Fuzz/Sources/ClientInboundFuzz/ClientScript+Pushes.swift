import FuzzKit
import LongLinkWire

@testable import LongLink

/// Pushes: the machine decides (it offers each push it takes to the consumers) and keeps the
/// consumers; the script stands for their buffers and for the app taking from them.
extension ClientScript {
    /// As `ClientCore.addSubscriber`: the machine admits the consumer or refuses it.
    mutating func addConsumer(topic: String?, limit: Int) {
        let consumer = Consumer(limit: limit)
        let admission = machine.addConsumer(
            consumer, id: nextConsumerID + 1, filter: TopicFilter(topic), madeIn: 0, session: 0, hasLink: link != nil)
        guard case .added(let actions) = admission else { return }
        nextConsumerID += 1
        run(actions)
    }

    /// The consumer's app takes up to `count` pushes, and the core collects what it took.
    mutating func take(from id: UInt64?, count: Int) {
        guard let id, let consumer = consumers[id] else { return }
        let taken = consumer.buffer.prefix(count)
        consumer.buffer.removeFirst(taken.count)
        var keys: [PushKey] = []
        for push in taken where push.isReliable {
            let first = consumer.delivered.insert(push.key).inserted
            check(first || forgottenEpochs.contains(push.key.epoch), "\(push.key) handed to one consumer twice")
            takenByApp.insert(push.key)
            keys.append(push.key)
        }
        let epochsBefore = Set(machine.ledger.delivered.map(\.epoch))
        let actions = machine.consumerTook(keys)
        forgottenEpochs.formUnion(epochsBefore.subtracting(machine.ledger.delivered.map(\.epoch)))
        run(actions)
    }

    mutating func removeConsumer(_ id: UInt64?) {
        guard let id, let consumer = consumers[id] else { return }
        let untaken = consumer.buffer.filter(\.isReliable)
        let epochsBefore = Set(machine.ledger.delivered.map(\.epoch))
        let actions = machine.ledger.consumerRemoved(id, untaken: untaken)
        forgottenEpochs.formUnion(epochsBefore.subtracting(machine.ledger.delivered.map(\.epoch)))
        perform(actions)
    }

    /// As `ClientCore.perform`: an ack goes out only for what the app took (the script's links
    /// always take writes; timers and `Sync`s are the events of the script).
    func perform(_ actions: [PushLedger<Consumer>.Action]) {
        for case .ack(_, let epoch, let seqs) in actions {
            for seq in seqs {
                let key = PushKey(epoch: epoch, seq: seq)
                check(takenByApp.contains(key), "an Ack for \(key), which the app never took")
            }
        }
    }

    mutating func finishConsumers() {
        _ = machine.removeAllConsumers()
    }

    // MARK: Invariants

    /// What must hold between events, whatever the server sent.
    func checkInvariants() {
        let book = machine.book
        check(book.count == waiting.count, "\(book.count) requests in the book, \(waiting.count) callers waiting")
        check(book.queuedCount + book.writtenCount == book.count, "queued and written do not add up")
        let queuedBytes = book.entries.values.filter { $0.stage == .queued }.reduce(0) { $0 + $1.request.payload.count }
        check(book.queuedBytes == queuedBytes, "queued bytes \(book.queuedBytes), counted \(queuedBytes)")
        // The queue's bound refuses new requests; resends after a drop are admitted already and may
        // go past it (each still ends by its deadline), so it is no invariant of the book.
        for entry in book.entries.values {
            if case .written(let generation) = entry.stage {
                check(generation == machine.links.generation, "a request written on link \(generation) outlived it")
            }
        }
        check(machine.links.generation == link?.generation, "the machine's link is not the socket's")
        if case .draining(let generation) = machine.phase {
            // Otherwise nothing would ever close the link, its gate shut (a finding of issue 22).
            check(book.hasWritten(on: generation), "a draining link with nothing left to answer")
        }
        if case .open(let generation) = machine.phase {
            check(
                book.queuedCount == 0 || book.writtenCount >= machine.inFlightLimit(generation),
                "requests wait in the queue while the open link could take them")
        }
        let ledger = machine.ledger
        check(ledger.held.count <= ledger.holdLimit, "more pushes held than the hold limit")
        check(ledger.delivered.count <= PushLedger<Consumer>.epochLimit, "more epochs remembered than the limit")
        let consumers = self.consumers
        for (key, state) in ledger.seqs {
            let holders = consumers.values.filter { $0.buffer.contains { $0.key == key } }.count
            switch state {
            case .held:
                check(holders == 0 && ledger.held.contains { $0.key == key }, "held \(key) is not only held")
            case .buffered(let count, _):
                check(holders == count, "\(key) in \(holders) buffers, the machine says \(count)")
            }
        }
        for consumer in consumers.values {
            check(consumer.buffer.count <= consumer.limit, "a consumer's buffer over its limit")
        }
    }
}

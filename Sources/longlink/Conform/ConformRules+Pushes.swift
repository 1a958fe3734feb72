import LongLinkWire

// Reliable pushes (Protocol.md, "Pushes, Ack and Sync"): none before Sync, then in increasing seq
// order with an epoch, and what was not acknowledged comes again on the next connection's Sync.
// `emit` makes the server push to the caller's principal on demand.
extension ConformRule {
    static let pushes: [ConformRule] = [
        ConformRule("pushes.none-before-sync", "no reliable push is sent before Sync; Sync then delivers them") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("before-sync")
            try link.login(context.user("before-sync"), id: "login-1")
            try emit(on: link, topic: "conform.before-sync", count: 3, id: "emit-1")
            for frame in link.frames(during: .milliseconds(300)) {
                if case .push(let push) = frame, push.seq > 0 {
                    throw ConformFailure("a reliable push came before Sync: \(ConformLink.text(frame))")
                }
            }
            try link.send(.sync(Frame.Sync()))
            _ = try reliablePushes(on: link, topic: "conform.before-sync", count: 3)
        },
        ConformRule(
            "pushes.ordered-after-sync",
            "after login and Sync, reliable pushes arrive in increasing seq order with an epoch"
        ) { context throws(ConformFailure) in
            let (link, _) = try context.welcomed("ordered")
            try link.login(context.user("ordered"), id: "login-1")
            try link.send(.sync(Frame.Sync()))
            try link.roundTrip(nonce: 41)
            try emit(on: link, topic: "conform.ordered", count: 5, id: "emit-1")
            _ = try reliablePushes(on: link, topic: "conform.ordered", count: 5)
        },
        ConformRule(
            "pushes.redelivery", "unacknowledged pushes come again on a new connection's Sync; acknowledged ones do not"
        ) { context throws(ConformFailure) in
            let user = context.user("redelivery")
            let topic = "conform.redelivery"
            let sent: [Frame.Push]
            do {
                let (link, _) = try context.welcomed("redelivery")
                try link.login(user, id: "login-1")
                try link.send(.sync(Frame.Sync()))
                try link.roundTrip(nonce: 51)
                try emit(on: link, topic: topic, count: 4, id: "emit-1")
                sent = try reliablePushes(on: link, topic: topic, count: 4)
                try link.send(.ack(Frame.Ack(seqs: sent.prefix(2).map(\.seq), epoch: sent[0].epoch)))
                try link.roundTrip(nonce: 52)
            }
            let (link, _) = try context.welcomed("redelivery-2")
            try link.login(user, id: "login-1")
            try link.send(.sync(Frame.Sync()))
            let expected = Set(sent.suffix(2).map(\.seq))
            let acknowledged = Set(sent.prefix(2).map(\.seq))
            var seen: Set<UInt64> = []
            let deadline = link.stepDeadline
            while seen != expected {
                let frame = try link.take("the unacknowledged seqs \(expected.sorted()) again", until: deadline) {
                    frame in
                    if case .push(let push) = frame { return push.topic == topic && push.seq > 0 }
                    return false
                }
                guard case .push(let push) = frame else { continue }
                if acknowledged.contains(push.seq) {
                    throw ConformFailure("acknowledged seq \(push.seq) was delivered again")
                }
                seen.insert(push.seq)
            }
            for frame in link.frames(during: .milliseconds(300)) {
                if case .push(let push) = frame, acknowledged.contains(push.seq), push.topic == topic {
                    throw ConformFailure("acknowledged seq \(push.seq) was delivered again")
                }
            }
        },
    ]

    /// Asks the server, with the contract's `emit`, for `count` reliable pushes on `topic`.
    static func emit(on link: ConformLink, topic: String, count: Int, id: String) throws(ConformFailure) {
        _ = try link.require("emit", Array(#"{"topic":"\#(topic)","n":\#(count),"reliable":true}"#.utf8), id: id)
    }

    /// The next `count` reliable pushes on `topic`, checked: seq above 0 and increasing, epoch not 0.
    static func reliablePushes(on link: ConformLink, topic: String, count: Int) throws(ConformFailure)
        -> [Frame.Push]
    {
        var pushes: [Frame.Push] = []
        let deadline = link.stepDeadline
        while pushes.count < count {
            let frame = try link.take("\(count - pushes.count) more pushes on \(topic)", until: deadline) { frame in
                if case .push(let push) = frame { return push.topic == topic }
                return false
            }
            guard case .push(let push) = frame else { continue }
            guard push.seq > 0 else { throw ConformFailure("a reliable push came with seq 0 (best effort)") }
            guard push.epoch != 0 else { throw ConformFailure("push seq \(push.seq) came with epoch 0") }
            if let last = pushes.last, push.seq <= last.seq {
                throw ConformFailure("push seq \(push.seq) came after seq \(last.seq)")
            }
            pushes.append(push)
        }
        return pushes
    }
}

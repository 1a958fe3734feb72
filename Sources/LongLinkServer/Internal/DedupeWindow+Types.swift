internal import LongLinkWire

/// The window's answers and the copies it hands back.
extension DedupeWindow {
    /// What to do with an arriving request.
    enum ArrivalAction {
        /// Not seen (or expired): run the handler; the caller is the first waiter. The run
        /// identifies this execution in ``finish(_:response:now:)`` and ``abandon(_:)``.
        case execute(Run)
        /// The same request is running: the caller was added as a waiter; do not run it again.
        case wait
        /// Finished within the window: send this stored reply, and bind the connection as the
        /// execution bound its own (`binding`, when it did); do not run the handler.
        case replay(Frame.Response, binding: StoredReply.Binding?)
        /// The id is held by a request for another method (`method`): refuse the copy, run nothing.
        case conflict(method: String)
        /// A budget is full and the client has no finished entry of its own left to give up:
        /// answer this status (`RESOURCE_EXHAUSTED`, saying when to retry); run and keep nothing.
        case refuse(Frame.Status)
    }

    /// A window bounded by entries alone, in all and per client.
    init(window: Duration, capacity: Int, capacityPerClient: Int = .max, origin: ContinuousClock.Instant = .now) {
        var limits = DedupeLimits()
        limits.entries = max(1, capacity)
        limits.entriesPerClient = max(1, capacityPerClient)
        self.init(window: window, limits: limits, origin: origin)
    }

    /// The copies waiting for one execution. Almost always exactly one (the request that started
    /// it), which is kept inline rather than in an array of its own.
    struct Waiters: Sequence {
        private var first: Waiter?
        private var others: [Waiter] = []

        init() {}

        init(_ waiter: Waiter) { first = waiter }

        var isEmpty: Bool { first == nil }

        mutating func append(_ waiter: Waiter) {
            if first == nil { first = waiter } else { others.append(waiter) }
        }

        mutating func removeAll(where matches: (Waiter) -> Bool) {
            var kept = Waiters()
            for waiter in self where !matches(waiter) { kept.append(waiter) }
            self = kept
        }

        func makeIterator() -> Iterator { Iterator(first: first, others: others.makeIterator()) }

        struct Iterator: IteratorProtocol {
            fileprivate var first: Waiter?
            fileprivate var others: IndexingIterator<[Waiter]>

            mutating func next() -> Waiter? {
                if let waiter = first {
                    first = nil
                    return waiter
                }
                return others.next()
            }
        }
    }
}

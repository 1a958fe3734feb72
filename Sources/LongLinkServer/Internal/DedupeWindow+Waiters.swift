extension DedupeWindow {
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

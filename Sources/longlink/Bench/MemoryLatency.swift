import Synchronization

/// How long one load takes when no cache holds the line: a chase through a random cycle over a
/// buffer larger than any cache a core of the bench machine can count on.
///
/// Why the bench measures it: at 1,024 requests in flight, the callers' 1,024 suspended tasks
/// (about 1.5 KiB each) and the server's de-duplication table do not fit in a core's 1 MiB of L2,
/// and on the 2-vCPU VM the figures come from, the L3 shared with other guests held almost
/// nothing of ours: a chase over 8 MiB already took DRAM's time (130–180 ns a load). So LongLink's
/// rate at that level follows the host's memory latency, which swings with the other guests'
/// load, while the bare client, with next to nothing in memory per request, hardly moves.
enum MemoryLatency {
    /// Four times the 8 MiB that measured as DRAM, so no cache can hold a meaningful part of it.
    static let chainBytes = 32 << 20
    /// About half a millisecond per probe at DRAM latency.
    static let loadsPerProbe = 2_000
    /// `Int`s in a 64-byte line: the chain visits one element per line.
    private static let intsPerLine = 64 / MemoryLayout<Int>.size

    /// One random cycle through every line of the buffer (Sattolo's shuffle): the first element
    /// of each line holds the index of the next line's first element. Built once, on first use;
    /// never written afterwards.
    private static let chain: [Int] = {
        let lines = chainBytes / 64
        var order = Array(0..<lines)
        var generator = SplitMix64(seed: 0x4c4c_4d45_4d4c_4154)
        var index = lines - 1
        while index > 0 {
            order.swapAt(index, Int.random(in: 0..<index, using: &generator))
            index -= 1
        }
        var chain = [Int](repeating: 0, count: lines * intsPerLine)
        for position in 0..<lines {
            chain[order[position] * intsPerLine] = order[(position + 1) % lines] * intsPerLine
        }
        return chain
    }()

    /// Where the last chase stopped (see ``probe(from:)``).
    private static let lastPosition = Atomic<Int>(0)

    /// Builds the chain now (some 10 ms of work, once per process), so that it happens before a
    /// measurement rather than in the first probe of one.
    static func prepare() {
        _ = chain.count
    }

    /// Nanoseconds per load over ``loadsPerProbe`` dependent loads, starting at `position` and
    /// leaving it where the chase stopped, so the next probe goes on to lines this one did not
    /// touch (and that are not cached because of it).
    static func probe(from position: inout Int) -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var index = position
        chain.withUnsafeBufferPointer { elements in
            for _ in 0..<loadsPerProbe { index = elements[index] }
        }
        // The chain never changes, so the optimiser may move the chase past the clock read that
        // ends it (it did: 0.2 ns a load). Publishing where the chase ended keeps it before.
        lastPosition.store(index, ordering: .sequentiallyConsistent)
        let end = clock.now
        position = index
        return (end - start).inSeconds * 1e9 / Double(loadsPerProbe)
    }
}

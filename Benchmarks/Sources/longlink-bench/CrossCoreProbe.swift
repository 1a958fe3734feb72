import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Watches how long a cache line takes to travel from one core to the other and back while a
/// measurement runs: every quarter of a second, two threads pinned to CPUs 0 and 1 pass a counter
/// back and forth a few thousand times (well under a millisecond; both threads sleep in between).
///
/// Why the bench measures it: on the 2-vCPU VM the figures come from, the host sometimes runs the
/// two virtual CPUs far apart, for seconds at a time. A round trip then takes about 300 ns instead
/// of about 55, and every hand-off between the callers' threads and the client loop (a submitted
/// call, a resumed caller) costs several times more, while the bare client, one thread talking to
/// the server through the kernel, hardly notices. A throughput row means little without the
/// placement it ran under, and one probe before and after a run misses changes within it.
///
/// Only where threads can be pinned (Linux); elsewhere ``start()`` returns nil.
final class CrossCoreProbe: Sendable {
    /// Round trips from this long count as the far placement.
    static let farThresholdNanoseconds = 150.0

    /// The share of `probes` (round trips in nanoseconds) that found the far placement; nil
    /// without probes.
    static func farShare(of probes: [Double]) -> Double? {
        guard !probes.isEmpty else { return nil }
        return Double(probes.filter { $0 >= farThresholdNanoseconds }.count) / Double(probes.count)
    }

    private static let seriesLength = 200
    private static let seriesCount = 8
    private static let interval = DispatchTimeInterval.milliseconds(250)
    /// The counter's value that ends one probe: the responder goes back to sleep.
    private static let probeOver = -1

    /// Odd: the measurer's turn is over, and the responder answers by adding one.
    private let counter = Atomic<Int>(0)
    private let stopRequested = Atomic<Bool>(false)
    private let wakeResponder = DispatchSemaphore(value: 0)
    private let wakeMeasurer = DispatchSemaphore(value: 0)
    private let state = Mutex(State())

    private struct State {
        var samples: [Double] = []
        var finished = false
        var waiter: CheckedContinuation<[Double], Never>?
    }

    private init() {}

    /// Starts probing on two threads of its own (never on the cooperative pool: it spins for a
    /// moment each time, and pinning would stick to a pool thread).
    static func start() -> CrossCoreProbe? {
        #if os(Linux)
            guard setAffinity != nil else { return nil }
            let probe = CrossCoreProbe()
            Thread { probe.respond() }.start()
            Thread { probe.measure() }.start()
            return probe
        #else
            return nil
        #endif
    }

    /// Stops probing; the round trip of each probe so far, in nanoseconds (each the fastest of a
    /// few short series, so a moment of preemption does not count).
    func stop() async -> [Double] {
        requestStop()
        return await withCheckedContinuation { continuation in
            let samples: [Double]? = state.withLock { state in
                if state.finished { return state.samples }
                state.waiter = continuation
                return nil
            }
            if let samples { continuation.resume(returning: samples) }
        }
    }

    /// Ends the probing without waiting for its samples: for paths that leave a measurement
    /// early (an error), so that the threads do not probe on until the process ends.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wakeMeasurer.signal()
    }

    private func measure() {
        let pinned = Self.pinCurrentThread(toCPU: 0)
        while pinned, !stopRequested.load(ordering: .acquiring) {
            if let nanoseconds = probeOnce() { state.withLock { $0.samples.append(nanoseconds) } }
            _ = wakeMeasurer.wait(timeout: .now() + Self.interval)
        }
        stopRequested.store(true, ordering: .releasing)
        wakeResponder.signal()
        let (samples, waiter) = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return (state.samples, state.waiter)
        }
        waiter?.resume(returning: samples)
    }

    /// One probe; nil when a series takes over 20 ms (the responder did not get a CPU).
    private func probeOnce() -> Double? {
        let clock = ContinuousClock()
        var best = Double.infinity
        var value = 0
        counter.store(0, ordering: .releasing)
        wakeResponder.signal()
        defer { counter.store(Self.probeOver, ordering: .releasing) }
        // Series 0 only gets both threads running.
        for series in 0...Self.seriesCount {
            let start = clock.now
            for _ in 0..<Self.seriesLength {
                counter.store(value + 1, ordering: .releasing)
                var spins = 0
                while counter.load(ordering: .acquiring) != value + 2 {
                    spins += 1
                    if spins & 0xFFF == 0, clock.now - start > .milliseconds(20) { return nil }
                }
                value += 2
            }
            if series > 0 {
                best = min(best, (clock.now - start).inSeconds * 1e9 / Double(Self.seriesLength))
            }
        }
        return best
    }

    private func respond() {
        guard Self.pinCurrentThread(toCPU: 1) else { return }
        while true {
            wakeResponder.wait()
            if stopRequested.load(ordering: .acquiring) { return }
            let clock = ContinuousClock()
            var lastAnswer = clock.now
            var spins = 0
            while true {
                let value = counter.load(ordering: .acquiring)
                if value == Self.probeOver { break }
                if value & 1 == 1 {
                    counter.store(value + 1, ordering: .releasing)
                    lastAnswer = clock.now
                } else {
                    spins += 1
                    // The measurer gave up on this probe without ending it: stop spinning.
                    if spins & 0xFFF == 0, clock.now - lastAnswer > .milliseconds(50) { break }
                }
            }
        }
    }

    #if os(Linux)
        /// `pthread_setaffinity_np`, looked up at run time: Glibc's module map leaves out the GNU
        /// extensions.
        private typealias SetAffinity = @convention(c) (pthread_t, Int, UnsafePointer<cpu_set_t>) -> Int32
        private static let setAffinity: SetAffinity? = dlsym(nil, "pthread_setaffinity_np").map {
            unsafeBitCast($0, to: SetAffinity.self)
        }
    #endif

    private static func pinCurrentThread(toCPU cpu: Int) -> Bool {
        #if os(Linux)
            guard let setAffinity else { return false }
            var set = cpu_set_t()
            withUnsafeMutableBytes(of: &set) { bytes in
                bytes.initializeMemory(as: UInt8.self, repeating: 0)
                let words = bytes.bindMemory(to: UInt.self)
                words[cpu / UInt.bitWidth] |= 1 << UInt(cpu % UInt.bitWidth)
            }
            return setAffinity(pthread_self(), MemoryLayout<cpu_set_t>.size, &set) == 0
        #else
            return false
        #endif
    }
}

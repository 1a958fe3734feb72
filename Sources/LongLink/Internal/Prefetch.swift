import CLongLinkPrefetch

/// Software prefetches for the loops that walk many objects no core has touched lately.
///
/// A mass expiry walks 100,000 calls and resumes 100,000 tasks, each cold in memory: one cache miss
/// after another when the loop waits for every object as it reaches it. Asking for the objects a
/// few places ahead overlaps those misses. A prefetch never faults, so a wrong address only wastes
/// the hint.
enum Prefetch {
    /// The first cache lines of a suspended task: the object's header, the job's fields and the
    /// task's status, what the runtime reads and writes first to resume it. Enough for a task
    /// that ran on another core a moment ago (``ResumeBatch``).
    static let taskHeadLines = 4
    /// The first 1.5 KiB of a suspended task, for a task nobody touched for seconds (a mass
    /// expiry). A resume also writes deeper into the task's first allocation: the suspended
    /// call's async context, and records the runtime adds and removes there. In `bench timeouts`
    /// this beat the head alone in 5 of 6 alternating rounds (medians 29.4 against 41.2 ms, then
    /// 37.0 against 38.7, 15 runs each).
    static let coldTaskLines = 24

    /// Starts loading the first `lines` cache lines of the object that `element` refers to, where
    /// `element` points at an array element holding a class reference.
    ///
    /// The reference is read as a plain word, not loaded as a reference: loading it would retain
    /// the object, and the retain writes the object's header at once, the very miss the prefetch
    /// is there to hide.
    @inline(__always)
    static func object(referencedBy element: UnsafeRawPointer, lines: Int) {
        guard let start = element.load(as: UnsafeRawPointer?.self) else { return }
        for line in 0..<lines { longlink_prefetch_for_write(start + line &* 64) }
    }

    /// Starts loading the first `lines` cache lines of the task that `continuation` resumes.
    @inline(__always)
    static func task<T, E>(of continuation: UnsafeContinuation<T, E>, lines: Int) {
        guard let task = taskAddress(of: continuation) else { return }
        for line in 0..<lines { longlink_prefetch_for_write(task + line &* 64) }
    }

    /// The suspended task's address: an `UnsafeContinuation` is, in today's runtime, one word
    /// holding it (a test checks this). Should the layout change, the size check makes it nil, and
    /// a wrong word would only prefetch the wrong memory.
    @inline(__always)
    static func taskAddress<T, E>(of continuation: UnsafeContinuation<T, E>) -> UnsafeRawPointer? {
        guard MemoryLayout<UnsafeContinuation<T, E>>.size == MemoryLayout<UnsafeRawPointer>.size else { return nil }
        return withUnsafeBytes(of: continuation) { $0.load(as: UnsafeRawPointer?.self) }
    }
}

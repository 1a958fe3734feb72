import CLongLinkPrefetch

/// Software prefetches for the loops that walk many objects no core has touched lately.
///
/// A mass expiry walks 100,000 calls and resumes 100,000 tasks, each cold in memory: one cache miss
/// after another when the loop waits for every object as it reaches it. Asking for the objects a
/// few places ahead overlaps those misses. A prefetch never faults, so a wrong address only wastes
/// the hint.
enum Prefetch {
    /// How many cache lines of a suspended task a resume touches first: the object's header, the
    /// job's fields and the task's status (what the runtime reads and writes to resume it).
    static let taskLines = 4

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

    /// Starts loading the task that `continuation` resumes.
    @inline(__always)
    static func task<T, E>(of continuation: UnsafeContinuation<T, E>) {
        guard let task = taskAddress(of: continuation) else { return }
        for line in 0..<taskLines { longlink_prefetch_for_write(task + line &* 64) }
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

import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fixed set of ``EventLoop``s handed out round robin.
public final class EventLoopGroup: Sendable {
    /// The loops, in the order ``next()`` hands them out.
    public let loops: [EventLoop]

    private let counter = Atomic<Int>(0)
    private let isShared: Bool

    /// Creates `loopCount` loops (at least one), named `name-0`, `name-1`, ….
    public convenience init(loopCount: Int, name: String = "longlink") {
        self.init(loopCount: loopCount, name: name, isShared: false)
    }

    private init(loopCount: Int, name: String, isShared: Bool) {
        loops = (0..<max(1, loopCount)).map { EventLoop(name: "\(name)-\($0)") }
        self.isShared = isShared
    }

    /// A process-wide group with one loop per online core, created on first use and never shut down
    /// (``shutdown()`` on it does nothing).
    public static let shared = EventLoopGroup(loopCount: onlineCores, name: "longlink", isShared: true)

    /// How many cores are online (at least 1), read once.
    package static let onlineCores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    /// The next loop, round robin. Thread-safe.
    public func next() -> EventLoop {
        let index = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: index) % UInt(loops.count))]
    }

    /// Shuts every loop down (see ``EventLoop/shutdown()``). Returns at once; idempotent. Does nothing on
    /// ``shared``.
    public func shutdown() {
        guard !isShared else {
            return
        }
        for loop in loops {
            loop.shutdown()
        }
    }

    /// Shuts every loop down and waits until their threads have finished. Does nothing on ``shared``.
    public func shutdownAndWait() async {
        guard !isShared else {
            return
        }
        for loop in loops {
            await loop.shutdownAndWait()
        }
    }
}

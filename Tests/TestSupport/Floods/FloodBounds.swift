/// The documented bounds of the floods (Docs.docc/Limits.md, "Amplification"), the same for one
/// server and for a fleet.
extension Flood {
    /// The documented bound of one flood.
    package struct Bound: Sendable {
        /// Bytes sent per byte received.
        package var amplification: Double
        /// Server CPU per frame of the flood, in a debug build on a shared 2-core machine.
        package var cpuPerFrame: Duration
        /// Resident memory the flood may leave grown.
        package var residentGrowth: Int
    }

    /// Measured (bytes out per byte in, one server / a fleet of one) in a debug build on a shared
    /// 2-core machine: Hello 1.54, Request 1.29 / 3.19 (on a fleet most of the 10,000 wait for
    /// the in-flight limit and are refused), refused Request 5.51 (`RESOURCE_EXHAUSTED` with its
    /// message for the smallest request), Ping 1.0 / 1.67 (the Pong carries the load), GoAway 0.24,
    /// garbage 0.02; Cancel, Ack and Sync (empty backlog) send nothing. Server CPU stayed under
    /// 15 µs a frame (40 µs for a Hello's connection). The CPU bounds leave a loaded machine (or a
    /// sanitizer) room; the byte bounds do not need it.
    package static let bounds: [String: Bound] = [
        "Hello": Bound(amplification: 2, cpuPerFrame: .microseconds(1_000), residentGrowth: 16 << 20),
        "Request": Bound(amplification: 4, cpuPerFrame: .microseconds(200), residentGrowth: 32 << 20),
        "Request (refused)": Bound(amplification: 12, cpuPerFrame: .microseconds(200), residentGrowth: 32 << 20),
        "Cancel": Bound(amplification: 0.01, cpuPerFrame: .microseconds(50), residentGrowth: 16 << 20),
        "Ack": Bound(amplification: 0.01, cpuPerFrame: .microseconds(2_000), residentGrowth: 16 << 20),
        "Sync": Bound(amplification: 0.01, cpuPerFrame: .microseconds(50), residentGrowth: 16 << 20),
        "Ping": Bound(amplification: 4, cpuPerFrame: .microseconds(100), residentGrowth: 16 << 20),
        "GoAway": Bound(amplification: 1, cpuPerFrame: .microseconds(500), residentGrowth: 16 << 20),
        "garbage": Bound(amplification: 0.1, cpuPerFrame: .microseconds(500), residentGrowth: 16 << 20),
    ]
}

import Foundation
import LongLinkTesting

/// The process's memory at one moment of a soak run.
struct SoakMemorySample: Sendable, Equatable, CustomStringConvertible {
    /// When, since the run started.
    var elapsed: Duration
    /// Resident set size in bytes (``ProcessMemory/residentBytes``).
    var residentBytes: Int
    /// Bytes in use on the C heap (``ProcessMemory/heapBytesInUse``).
    var heapBytesInUse: Int

    /// A sample with the given figures.
    init(elapsed: Duration, residentBytes: Int, heapBytesInUse: Int) {
        self.elapsed = elapsed
        self.residentBytes = residentBytes
        self.heapBytesInUse = heapBytesInUse
    }

    /// The process's memory now, `elapsed` into the run.
    static func now(elapsed: Duration) -> SoakMemorySample {
        SoakMemorySample(
            elapsed: elapsed, residentBytes: ProcessMemory.residentBytes, heapBytesInUse: ProcessMemory.heapBytesInUse)
    }

    /// `RSS 21.6 MiB, malloc in use 9.8 MiB`.
    var description: String {
        "RSS \(Self.mebibytes(residentBytes)), malloc in use \(Self.mebibytes(heapBytesInUse))"
    }

    /// `elapsed` as minutes and seconds (`5m00s`).
    var elapsedText: String {
        let seconds = Int(elapsed.components.seconds)
        return String(format: "%dm%02ds", seconds / 60, seconds % 60)
    }

    static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}

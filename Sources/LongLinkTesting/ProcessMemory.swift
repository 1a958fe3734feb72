internal import CMallocStatistics
import Foundation

/// The process's resident memory, for the soak's bounds.
public enum ProcessMemory {
    /// Resident set size in bytes (0 where it cannot be read).
    public static var residentBytes: Int {
        #if os(Linux)
            // /proc/self/statm: size resident shared ... in pages.
            guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
            let fields = text.split(separator: " ")
            guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
            return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
            var info = rusage()
            getrusage(RUSAGE_SELF, &info)
            return Int(info.ru_maxrss)
        #endif
    }

    /// Bytes the C heap has handed out and not had back (every arena, mapped blocks included): what
    /// the process holds, without the free pages the allocator keeps.
    public static var heapBytesInUse: Int {
        #if canImport(Darwin)
            var statistics = malloc_statistics_t()
            malloc_zone_statistics(nil, &statistics)
            return Int(statistics.size_in_use)
        #else
            let info = mallinfo2()
            return Int(info.uordblks) + Int(info.hblkhd)
        #endif
    }
}

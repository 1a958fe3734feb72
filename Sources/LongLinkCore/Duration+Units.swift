extension Duration {
    /// The duration in seconds, as a floating-point number (shared by every module of the package).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole milliseconds for a `*_ms` field of the protocol: truncated, clamped to `0...UInt32.max`.
    package var wireMilliseconds: UInt32 {
        let (seconds, attoseconds) = components
        let (scaled, multiplyOverflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (total, addOverflow) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard !multiplyOverflow, !addOverflow else { return seconds < 0 ? 0 : .max }
        return UInt32(clamping: max(0, total))
    }

    /// Whole nanoseconds, rounded toward negative infinity and clamped to `-limit...limit`: the
    /// plain integers that loops and windows keep their times in (a `ContinuousClock.Instant` is
    /// opaque outside the standard library, so every operation on one is a call).
    package func nanoseconds(clampedTo limit: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let whole = attoseconds / 1_000_000_000
        let floored = attoseconds < 0 && attoseconds % 1_000_000_000 != 0 ? whole - 1 : whole
        let (scaled, multiplyOverflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, addOverflow) = scaled.addingReportingOverflow(floored)
        guard !multiplyOverflow, !addOverflow else { return seconds < 0 ? -limit : limit }
        return min(max(total, -limit), limit)
    }
}

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
}

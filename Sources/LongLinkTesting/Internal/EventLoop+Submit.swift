import LongLinkTransport

extension EventLoop {
    /// Runs `body` on the loop and returns once it has run. The loop must be running (work submitted to a stopped
    /// loop is dropped, and this would never return).
    func submitAndWait(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            execute {
                body()
                continuation.resume()
            }
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else {
            return seconds < 0 ? .min : .max
        }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

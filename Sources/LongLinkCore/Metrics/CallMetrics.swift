import Synchronization

/// The per-method metrics of calls, for the client (`longlink_client_…`) and the server
/// (`longlink_server_…`): `…_requests_total` by method and status, `…_request_duration_seconds`
/// by method, and `…_requests_in_flight`. A status is one of ``StatusCode``'s names (`OK`,
/// `DEADLINE_EXCEEDED`). The methods are bounded: past ``maxMethods`` the rest share the method
/// label `other`.
package final class CallMetrics: Sendable {
    /// The most methods with series of their own.
    package static let maxMethods = 1_000

    private let sink: any MetricsSink
    private let prefix: String
    private let inFlight: any MetricsGauge
    private let running = Atomic<Int>(0)
    private let methods = Locked<[String: MethodMetrics]>([:])

    /// Metrics named `prefix_…` (`longlink_client`, `longlink_server`) in `sink`.
    package init(sink: any MetricsSink, prefix: String, side: String) {
        self.sink = sink
        self.prefix = prefix
        sink.describe(label: "\(prefix)_request_duration_seconds", help: "\(side) call durations by method.")
        sink.describe(label: "\(prefix)_requests_total", help: "\(side) calls ended, by method and status.")
        sink.describe(label: "\(prefix)_requests_in_flight", help: "\(side) calls under way now.")
        inFlight = sink.makeGauge(label: "\(prefix)_requests_in_flight", dimensions: [])
        inFlight.record(0)
    }

    /// The metrics of `method` (made on first use).
    package func method(_ method: String) -> MethodMetrics {
        methods.withLock { methods in
            if let metrics = methods[method] { return metrics }
            let label = methods.count < Self.maxMethods ? method : "other"
            if let shared = methods[label] { return shared }
            let metrics = MethodMetrics(sink: sink, prefix: prefix, method: label)
            methods[label] = metrics
            return metrics
        }
    }

    /// A call started (the in-flight gauge goes up).
    package func started() {
        inFlight.record(Double(running.add(1, ordering: .relaxed).newValue))
    }

    /// A call of `method` ended with `status` after `duration`.
    package func ended(_ method: MethodMetrics, _ status: StatusCode, after duration: Duration) {
        inFlight.record(Double(running.subtract(1, ordering: .relaxed).newValue))
        method.record(status, after: duration)
    }

    /// `body` as a call of `method`: counted in flight while it runs, then timed and counted with
    /// its status (``status(of:)`` when it throws).
    package func measure<Result>(_ method: MethodMetrics, _ body: () throws -> Result) rethrows -> Result {
        started()
        let start = ContinuousClock.now
        do {
            let result = try body()
            ended(method, .ok, after: .now - start)
            return result
        } catch {
            ended(method, Self.status(of: error), after: .now - start)
            throw error
        }
    }

    /// ``measure(_:_:)`` of an asynchronous `body`, run on the caller's executor.
    nonisolated(nonsending) package func measure<Result>(
        _ method: MethodMetrics, _ body: nonisolated(nonsending) () async throws -> Result
    ) async rethrows -> Result {
        started()
        let start = ContinuousClock.now
        do {
            let result = try await body()
            ended(method, .ok, after: .now - start)
            return result
        } catch {
            ended(method, Self.status(of: error), after: .now - start)
            throw error
        }
    }

    /// The status a call that threw `error` ended with.
    package static func status(of error: any Error) -> StatusCode {
        switch error {
        case let error as LongLinkError: error.code.status
        case is CancellationError: .cancelled
        default: .internalError
        }
    }
}

/// The series of one method (see ``CallMetrics``).
package final class MethodMetrics: Sendable {
    private let sink: any MetricsSink
    private let prefix: String
    private let method: String
    private let timer: any MetricsTimer
    private let outcomes = Locked<[StatusCode: any MetricsCounter]>([:])

    init(sink: any MetricsSink, prefix: String, method: String) {
        self.sink = sink
        self.prefix = prefix
        self.method = method
        self.timer = sink.makeTimer(label: "\(prefix)_request_duration_seconds", dimensions: [("method", method)])
    }

    func record(_ status: StatusCode, after duration: Duration) {
        timer.record(duration)
        let counter = outcomes.withLock { outcomes in
            if let counter = outcomes[status] { return counter }
            let counter = sink.makeCounter(
                label: "\(prefix)_requests_total", dimensions: [("method", method), ("status", status.description)])
            outcomes[status] = counter
            return counter
        }
        counter.increment(by: 1)
    }
}

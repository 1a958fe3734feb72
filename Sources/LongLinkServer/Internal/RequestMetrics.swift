internal import LongLinkCore
import Synchronization

/// The per-method metrics of the handlers a server runs: `longlink_server_requests_total` by
/// method and status and `longlink_server_request_duration_seconds` by method. Only registered
/// methods get a series (a client cannot make up labels), and a status is one of
/// ``StatusCode``'s (by its name, `OK`, `DEADLINE_EXCEEDED`), so the series are bounded by the router.
final class RequestMetrics: Sendable {
    private let sink: any MetricsSink
    private let method: String
    private let timer: any MetricsTimer
    private let outcomes = Mutex<[StatusCode: any MetricsCounter]>([:])

    init(sink: any MetricsSink, method: String) {
        self.sink = sink
        self.method = method
        sink.describe(label: "longlink_server_request_duration_seconds", help: "Handler durations by method.")
        sink.describe(label: "longlink_server_requests_total", help: "Handlers ended, by method and status.")
        self.timer = sink.makeTimer(label: "longlink_server_request_duration_seconds", dimensions: [("method", method)])
    }

    /// One handler ended with `status` after `duration`.
    func record(_ status: StatusCode, after duration: Duration) {
        timer.record(duration)
        let counter = outcomes.withLock { outcomes in
            if let counter = outcomes[status] { return counter }
            let counter = sink.makeCounter(
                label: "longlink_server_requests_total",
                dimensions: [("method", method), ("status", status.description)])
            outcomes[status] = counter
            return counter
        }
        counter.increment(by: 1)
    }

    /// The status a handler's outcome is answered with (see ``Router``).
    static func status(of error: any Error) -> StatusCode {
        switch error {
        case let error as LongLinkError: error.code.status
        case is CancellationError: .cancelled
        default: .internalError
        }
    }
}

extension Router {
    /// This router with every route timed and counted in `sink`.
    func instrumented(with sink: any MetricsSink) -> Router {
        var router = self
        router.mapRoutes { method, route in
            let metrics = RequestMetrics(sink: sink, method: method)
            switch route {
            case .synchronous(let handler):
                return .synchronous { payload, context in
                    let start = ContinuousClock.now
                    do {
                        let reply = try handler(payload, context)
                        metrics.record(.ok, after: .now - start)
                        return reply
                    } catch {
                        metrics.record(RequestMetrics.status(of: error), after: .now - start)
                        throw error
                    }
                }
            case .async(let handler):
                return .async { payload, context in
                    let start = ContinuousClock.now
                    do {
                        let reply = try await handler(payload, context)
                        metrics.record(.ok, after: .now - start)
                        return reply
                    } catch {
                        metrics.record(RequestMetrics.status(of: error), after: .now - start)
                        throw error
                    }
                }
            }
        }
        return router
    }
}

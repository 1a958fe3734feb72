internal import LongLinkCore

extension Router {
    /// This router with every route timed and counted in `sink` (``CallMetrics``, by registered
    /// method: a client cannot make up labels).
    func instrumented(with sink: any MetricsSink) -> Router {
        let calls = CallMetrics(sink: sink, prefix: "longlink_server", side: "Handler")
        var router = self
        router.mapRoutes { method, route in
            let metrics = calls.method(method)
            switch route {
            case .synchronous(let handler):
                return .synchronous { payload, context in
                    try calls.measure(metrics) { try handler(payload, context) }
                }
            case .async(let handler):
                return .async { payload, context in
                    try await calls.measure(metrics) { try await handler(payload, context) }
                }
            }
        }
        return router
    }
}

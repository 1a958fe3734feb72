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
                    calls.started()
                    let start = ContinuousClock.now
                    do {
                        let reply = try handler(payload, context)
                        calls.ended(metrics, .ok, after: .now - start)
                        return reply
                    } catch {
                        calls.ended(metrics, CallMetrics.status(of: error), after: .now - start)
                        throw error
                    }
                }
            case .async(let handler):
                return .async { payload, context in
                    calls.started()
                    let start = ContinuousClock.now
                    do {
                        let reply = try await handler(payload, context)
                        calls.ended(metrics, .ok, after: .now - start)
                        return reply
                    } catch {
                        calls.ended(metrics, CallMetrics.status(of: error), after: .now - start)
                        throw error
                    }
                }
            }
        }
        return router
    }
}

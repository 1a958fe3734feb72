/// Code that runs around every handler with the request's context: authenticate, rate-limit,
/// log with the request id, time it. The shape of grpc-swift 2's server interceptors.
///
/// Interceptors are listed in ``Router/interceptors`` and run in that order: the first sees the
/// request first and the reply (or error) last. Each calls `next` to go on (the next interceptor,
/// then the handler), or throws, or returns a reply of its own, to stop there; a
/// ``LongLinkError`` it throws is the caller's status, as a handler's would be.
///
/// ```swift
/// struct RequireLogin: ServerInterceptor {
///     func intercept(
///         _ payload: [UInt8], context: RequestContext,
///         next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
///     ) async throws -> [UInt8] {
///         guard context.principal != nil || context.method == "login" else {
///             throw LongLinkError(code: .unauthenticated, message: "log in first")
///         }
///         return try await next(payload, context)
///     }
/// }
/// router.interceptors = [RequireLogin(), try RateLimitInterceptor(rate: 100, burst: 200)]
/// ```
///
/// They run for the methods the router has (a method it does not have is answered
/// `UNIMPLEMENTED` without them), and for the first run of a request only: a copy answered from
/// the de-duplication window does not run them again.
public protocol ServerInterceptor: Sendable {
    /// Runs around one handler: call `next` with the payload and context to go on.
    func intercept(
        _ payload: [UInt8], context: RequestContext,
        next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
    ) async throws -> [UInt8]
}

extension Router {
    /// This router with ``interceptors`` around every route (a synchronous route then runs as an
    /// asynchronous one: an interceptor may suspend).
    func intercepted() -> Router {
        let interceptors = self.interceptors
        guard !interceptors.isEmpty else { return self }
        var router = self
        router.mapRoutes { _, route in
            let handler: Handler
            switch route {
            case .async(let async): handler = async
            case .synchronous(let synchronous): handler = { payload, context in try synchronous(payload, context) }
            }
            // Built inside out: the last interceptor is nearest the handler.
            var chain = handler
            for interceptor in interceptors.reversed() {
                let next = chain
                chain = { payload, context in try await interceptor.intercept(payload, context: context, next: next) }
            }
            return .async(chain)
        }
        return router
    }
}

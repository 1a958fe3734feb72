/// Code that runs around every call a client makes: add metadata (a trace id, a token), observe
/// the call, its result and its latency. The shape of grpc-swift 2's client interceptors.
///
/// Interceptors are listed in ``ClientConfiguration/interceptors`` and run in that order: the
/// first sees the call first and its result last. Each calls `next` to go on (the next
/// interceptor, then the wire), or throws, or returns a reply of its own, to stop there.
///
/// ```swift
/// struct Tracing: ClientInterceptor {
///     func intercept(
///         _ call: ClientCall, next: @Sendable (ClientCall) async throws -> [UInt8]
///     ) async throws -> [UInt8] {
///         var call = call
///         call.options.metadata["trace-id"] = makeTraceID()
///         return try await next(call)
///     }
/// }
/// ```
///
/// They run for ``LongLinkClient/request(_:payload:options:)`` and what is built on it (typed
/// calls, ``LongLinkClient/send(_:options:)``), not for the login and subscription calls the
/// supervisor makes on each connect.
public protocol ClientInterceptor: Sendable {
    /// Runs around one call: call `next` with the call to go on.
    func intercept(_ call: ClientCall, next: @Sendable (ClientCall) async throws -> [UInt8]) async throws -> [UInt8]
}

/// One call as a ``ClientInterceptor`` sees it, and may change before it goes on.
public struct ClientCall: Sendable {
    /// The method called.
    public var method: String
    /// The request's payload.
    public var payload: [UInt8]
    /// The call's options: its timeout, metadata, cache policy.
    public var options: RequestOptions

    /// A call of `method`.
    public init(method: String, payload: [UInt8], options: RequestOptions) {
        self.method = method
        self.payload = payload
        self.options = options
    }
}

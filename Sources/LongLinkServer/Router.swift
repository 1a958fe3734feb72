internal import LongLinkWire

/// The server's method table: handlers registered by method name.
///
/// A handler returns the reply payload or throws. A ``LongLinkError`` becomes its status code and
/// message in the `Response`; any other error becomes `INTERNAL` with a generic message (error
/// text from arbitrary errors is not sent to clients). A method with no handler is `UNIMPLEMENTED`.
public struct Router: Sendable {
    /// A raw handler: payload bytes in, payload bytes out.
    public typealias Handler = @Sendable (_ payload: [UInt8], _ context: RequestContext) async throws -> [UInt8]

    /// A handler that never suspends: it runs inline on the connection's event loop, without a task.
    public typealias SynchronousHandler = @Sendable (_ payload: [UInt8], _ context: RequestContext) throws -> [UInt8]

    /// How a route runs.
    enum Route: Sendable {
        case async(Handler)
        case synchronous(SynchronousHandler)
    }

    private var routes: [String: Route] = [:]

    /// What runs around every handler, in order: the first sees each request first (see
    /// ``ServerInterceptor``). Read when the server is made.
    public var interceptors: [any ServerInterceptor] = []

    /// An empty router.
    public init() {}

    /// The registered method names.
    public var methods: [String] { routes.keys.sorted() }

    /// Registers a raw handler for `method`, replacing any earlier one. It runs in a task of its own
    /// (on the connection's event loop when ``ServerConfiguration/runsHandlersOnEventLoop`` is set).
    public mutating func register(_ method: String, handler: @escaping Handler) {
        routes[method] = .async(handler)
    }

    /// Registers a handler that answers without suspending (a lookup, an echo, a cache read). It
    /// runs inline on the connection's event loop, with no task per request: the fastest route, for
    /// work that takes microseconds. Anything that waits belongs in ``register(_:handler:)``.
    public mutating func register(_ method: String, synchronous handler: @escaping SynchronousHandler) {
        routes[method] = .synchronous(handler)
    }

    /// Registers a typed handler: the payload is decoded as `Request` and the reply encoded with
    /// `codec` (JSON by default, the client's default too; a router does not know
    /// ``ServerConfiguration/codec``, which routes registered by a ``LongLinkRequest`` type use).
    /// A payload that does not decode is answered `INVALID_ARGUMENT`.
    public mutating func register<Request: Decodable & Sendable, Reply: Encodable & Sendable>(
        _ method: String, request: Request.Type, codec: some PayloadCodec = JSONPayloadCodec(),
        handler: @escaping @Sendable (Request, RequestContext) async throws -> Reply
    ) {
        routes[method] = .async { payload, context in
            let decoded: Request
            do {
                decoded = try codec.decode(Request.self, from: payload)
            } catch {
                throw LongLinkError(code: .invalidArgument, message: "payload of \(method) does not decode")
            }
            return try codec.encode(try await handler(decoded, context))
        }
    }

    /// Registers the refresh of a session's credential under `method` (a name the app chooses, the
    /// one its clients send): `handler` checks the new credential in `payload` and returns its
    /// lifetime, which replaces the session's expiry in place on the live link (see
    /// ``RequestContext/setCredentialLifetime(_:)``); the reply is empty. A handler that throws
    /// leaves the expiry as it was. A refresh on a session nobody logged in to, or whose
    /// credential expired already, is answered `UNAUTHENTICATED` without running `handler`.
    public mutating func registerCredentialRefresh(
        _ method: String,
        handler: @escaping @Sendable (_ payload: [UInt8], _ context: RequestContext) async throws -> Duration
    ) {
        routes[method] = .async { payload, context in
            guard context.principal != nil else {
                throw LongLinkError(code: .unauthenticated, message: "no session to refresh: log in first")
            }
            guard !context.session.credentialExpired else {
                throw LongLinkError(code: .unauthenticated, message: "credential expired")
            }
            let lifetime = try await handler(payload, context)
            guard context.setCredentialLifetime(lifetime) != nil else {
                throw LongLinkError(code: .unauthenticated, message: "credential expired")
            }
            return []
        }
    }

    /// The handler for `method`, if registered (a synchronous one wrapped as asynchronous).
    public func handler(for method: String) -> Handler? {
        switch routes[method] {
        case .async(let handler)?: handler
        case .synchronous(let handler)?: { payload, context in try handler(payload, context) }
        case nil: nil
        }
    }

    func route(for method: String) -> Route? {
        routes[method]
    }

    /// Replaces every route with what `transform` makes of it (wrapping it for metrics, say).
    mutating func mapRoutes(_ transform: (_ method: String, _ route: Route) -> Route) {
        for (method, route) in routes { routes[method] = transform(method, route) }
    }
}

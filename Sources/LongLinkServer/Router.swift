import LongLinkWire

/// The server's method table: handlers registered by method name.
///
/// A handler returns the reply payload or throws. A ``LongLinkError`` becomes its status code and
/// message in the `Response`; any other error becomes `INTERNAL` with a generic message (error
/// text from arbitrary errors is not sent to clients). A method with no handler is `UNIMPLEMENTED`.
public struct Router: Sendable {
    /// A raw handler: payload bytes in, payload bytes out.
    public typealias Handler = @Sendable (_ payload: [UInt8], _ context: RequestContext) async throws -> [UInt8]

    private var handlers: [String: Handler] = [:]

    /// An empty router.
    public init() {}

    /// The registered method names.
    public var methods: [String] { handlers.keys.sorted() }

    /// Registers a raw handler for `method`, replacing any earlier one.
    public mutating func register(_ method: String, handler: @escaping Handler) {
        handlers[method] = handler
    }

    /// Registers a typed handler: the payload is decoded as `Request` and the reply encoded with
    /// `codec` (JSON by default, the client's default too). A payload that does not decode is
    /// answered `INVALID_ARGUMENT`.
    public mutating func register<Request: Decodable & Sendable, Reply: Encodable & Sendable>(
        _ method: String, request: Request.Type, codec: some PayloadCodec = JSONPayloadCodec(),
        handler: @escaping @Sendable (Request, RequestContext) async throws -> Reply
    ) {
        handlers[method] = { payload, context in
            let decoded: Request
            do {
                decoded = try codec.decode(Request.self, from: payload)
            } catch {
                throw LongLinkError(code: .invalidArgument, message: "payload of \(method) does not decode")
            }
            return try codec.encode(try await handler(decoded, context))
        }
    }

    /// The handler for `method`, if registered.
    public func handler(for method: String) -> Handler? {
        handlers[method]
    }
}

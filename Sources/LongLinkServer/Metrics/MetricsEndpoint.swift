public import LongLinkTransport
import Synchronization

/// A small HTTP listener that serves a metrics page (Prometheus's text format) at `/metrics`, for
/// a scraper: `longlink serve --metrics HOST:PORT` runs one beside the server.
///
/// ```swift
/// let metrics = try PrometheusMetrics()
/// let endpoint = try await MetricsEndpoint.start(on: .tcp(host: "127.0.0.1", port: 9464)) {
///     server.reportMetrics()
///     return metrics.render()
/// }
/// ```
///
/// It answers `GET` and `HEAD` of `/metrics` (and `/`) with the page and anything else with an
/// error status, one request per connection. A connection that has not sent its request's head
/// (at most 8 KiB) within ``requestTimeout`` is closed, and at most ``maxConnections`` are served
/// at once (the rest are closed on accept).
public final class MetricsEndpoint: Sendable {
    /// How long a connection may take to send its request.
    public static let requestTimeout: Duration = .seconds(10)
    /// The most connections served at once.
    public static let maxConnections = 64

    /// The bound address (with the real port when bound to port 0).
    public var localAddress: SocketAddress { listener.localAddress }

    private let listener: Listener

    private init(listener: Listener) {
        self.listener = listener
    }

    /// Binds `endpoint` and serves the page `render` returns, asked once per request (on an event
    /// loop: keep it quick).
    /// - Throws: what binding throws (`ioFailure` for an address in use, `addressResolutionFailed`).
    public static func start(
        on endpoint: Endpoint, render: @escaping @Sendable () -> String
    ) async throws(LongLinkError) -> MetricsEndpoint {
        let open = Atomic<Int>(0)
        let listener = try await Listener.bind(to: endpoint) { connection in
            guard open.add(1, ordering: .relaxed).newValue <= maxConnections else {
                open.subtract(1, ordering: .relaxed)
                connection.close(.immediately)
                return
            }
            let handler = MetricsHTTPHandler(render: render) { open.subtract(1, ordering: .relaxed) }
            handler.timer = connection.eventLoop.scheduleTimer(after: requestTimeout) { [weak connection] in
                connection?.close(.immediately)
            }
            connection.start(handler: handler)
        }
        return MetricsEndpoint(listener: listener)
    }

    /// Stops listening and waits until the socket is closed (connections being answered finish).
    public func close() async {
        await listener.closeAndWait()
    }
}

/// Answers one request on one connection (on its loop).
final class MetricsHTTPHandler: ConnectionHandler {
    private let render: @Sendable () -> String
    private let closed: @Sendable () -> Void
    private var exchange = MetricsHTTPExchange()
    private var answered = false
    var timer: EventLoopTimer?

    init(render: @escaping @Sendable () -> String, closed: @escaping @Sendable () -> Void) {
        self.render = render
        self.closed = closed
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }
        let outcome = exchange.received(bytes)
        guard outcome != .incomplete else { return }
        answered = true
        let body: String
        if case .page = outcome { body = render() } else { body = "" }
        connection.write(MetricsHTTPExchange.response(to: outcome, body: body))
        connection.close(.graceful)
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        if let timer { connection.eventLoop.cancelTimer(timer) }
        timer = nil
        closed()
    }
}

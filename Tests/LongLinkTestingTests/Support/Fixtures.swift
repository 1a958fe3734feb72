import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire

/// Runs `body` with an echo server and a started proxy in front of it; stops both afterwards (bounded).
func withEchoProxy(
    group: EventLoopGroup = .shared, echoes: Bool = true, keepsBytes: Bool = true,
    _ body: (EchoServer, FaultProxy) async throws -> Void
) async throws {
    let echo = try await EchoServer.start(echoes: echoes, keepsBytes: keepsBytes)
    let proxy = FaultProxy(upstream: echo.endpoint, group: group)
    do {
        try await proxy.start()
        try await body(echo, proxy)
    } catch {
        try? await within(.seconds(10), "the proxy to stop") { await proxy.stop() }
        echo.stop()
        throw error
    }
    try await within(.seconds(10), "the proxy to stop") { await proxy.stop() }
    echo.stop()
}

/// Sends `text` and waits until the peer has received everything it should have by then (`expected`).
func roundTrip(_ peer: TestPeer, _ text: String, expecting expected: String) async throws {
    try await peer.send(text)
    try await peer.waitForText(expected)
}

/// Decodes the frames in `bytes` (nil when they are malformed).
func frames(in bytes: [UInt8]) -> [Frame]? {
    var decoder = FrameDecoder()
    var frames: [Frame] = []
    do {
        try bytes.withUnsafeBytes { try decoder.decode($0, into: &frames) }
    } catch {
        return nil
    }
    return frames
}

/// Sends `Hello` and waits for the server's first frame, which must be `Welcome`.
func handshake(_ peer: TestPeer, clientID: String = "x") async throws -> Frame.Welcome? {
    var hello: [UInt8] = []
    Frame.hello(Frame.Hello(clientID: clientID)).encodeDelimited(into: &hello)
    try await peer.send(hello)
    let state = try await peer.state.wait("a frame from the server") { state in
        !(frames(in: state.bytes) ?? []).isEmpty
    }
    guard case .welcome(let welcome) = frames(in: state.bytes)?.first else {
        return nil
    }
    return welcome
}

import LongLinkCore
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Fills a connection whose peer does not read until `send` suspends; returns the task still sending and a
/// counter of how its sends ended.
private func startStalledProducer(
    _ connection: Connection, handler: RecordingHandler
) async throws -> (Task<Void, Never>, Watched<[LongLinkError.Code]>) {
    let failures = Watched<[LongLinkError.Code]>([])
    let producer = Task {
        while true {
            do throws(LongLinkError) {
                try await connection.send([UInt8](repeating: 7, count: 64 << 10))
            } catch {
                failures.update { $0.append(error.code) }
                return
            }
        }
    }
    try await handler.log.wait("isWritable to turn false", within: .seconds(20)) { $0.writabilityChanges.contains(false) }
    try await waitForSuspendedSend(connection)
    return (producer, failures)
}

/// Confirms after a few more loop iterations that nothing more was reported.
private func settle(_ loops: EventLoop...) async {
    for loop in loops {
        await roundTrips(loop, 5)
    }
}

@Suite("Closing", .sharedMachine)
struct CloseTests {
    @Test("the peer closing gives didCloseWith(nil) exactly once; later writes and sends are ignored or throw")
    func peerCloses() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "peer-close-server")
        let clientLoop = EventLoop(name: "peer-close-client")
        let server = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: serverGroup)
        let (connection, handler) = try await connectAndStart(server.endpoint, on: clientLoop)
        let (serverConnection, serverHandler) = try await server.connection()

        serverConnection.close()
        let log = try await handler.waitForClose()
        #expect(log.closeCount == 1)
        #expect(log.closedCleanly)
        let serverLog = try await serverHandler.waitForClose()
        #expect(serverLog.closeCount == 1)
        #expect(serverLog.closedCleanly, "a local graceful close reports nil")

        let state = await onLoop(clientLoop) {
            connection.write([1, 2, 3])
            connection.write { $0.append(4) }
            connection.flush()
            return (connection.isClosed, connection.isWritable, connection.bufferedWriteBytes)
        }
        #expect(state == (true, false, 0))
        await #expect(throws: LongLinkError.self) { try await connection.send([1]) }
        connection.close(.reset)
        serverConnection.close(.immediately)
        await settle(clientLoop, serverConnection.eventLoop)
        #expect(handler.log.value.closeCount == 1)
        #expect(serverHandler.log.value.closeCount == 1)
        #expect(handler.log.value.callbacksAfterClose == 0)

        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("the peer resetting gives connectionReset; close(.reset) makes the peer see ECONNRESET")
    func peerResets() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "reset-server")
        let clientLoop = EventLoop(name: "reset-client")
        // The server resets the connection as soon as it reads the client's first byte.
        final class ResettingHandler: ConnectionHandler, Sendable {
            let inner = RecordingHandler()
            func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
                inner.connection(connection, didRead: bytes)
                connection.close(.reset)
            }
            func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
                inner.connection(connection, didCloseWith: error)
            }
        }
        let serverHandlers = Watched<[RecordingHandler]>([])
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0), group: serverGroup) { connection in
            let handler = ResettingHandler()
            connection.start(handler: handler)
            serverHandlers.update { $0.append(handler.inner) }
        }
        let (connection, handler) = try await connectAndStart(
            .tcp(host: "127.0.0.1", port: listener.localAddress.port!), on: clientLoop)
        try await connection.send([42])

        let log = try await handler.waitForClose()
        #expect(log.closeCount == 1)
        #expect(log.closeCode == .connectionReset)
        #expect((log.closeError?.underlying as? SystemCallError)?.errno == ECONNRESET)
        let serverHandler = try await serverHandlers.wait("the server's handler") { !$0.isEmpty }[0]
        let serverLog = try await serverHandler.waitForClose()
        #expect(serverLog.closeCount == 1)
        #expect(serverLog.closedCleanly, "close(.reset) without an error reports nil locally")
        await settle(clientLoop, serverGroup.loops[0])
        #expect(handler.log.value.closeCount == 1)

        listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("closing while a send is suspended makes it throw once, with the close error")
    func closeWhileSendSuspended() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "suspended-server")
        let clientLoop = EventLoop(name: "suspended-client")
        let server = try await TestServer.start(
            .tcp(host: "127.0.0.1", port: 0), group: serverGroup, pauseReading: true)
        let (connection, handler) = try await connectAndStart(server.endpoint, on: clientLoop)
        let (producer, failures) = try await startStalledProducer(connection, handler: handler)

        // A second sender waits behind the first.
        let second = Task { () async -> LongLinkError.Code? in
            do throws(LongLinkError) {
                try await connection.send([1])
                return nil
            } catch {
                return error.code
            }
        }
        // Close from a thread that is not the loop, with an error of our choosing.
        connection.close(.immediately, error: LongLinkError(code: .goAway, message: "test closes"))
        try await within(.seconds(5), "the producer") { await producer.value }
        let secondResult = try await within(.seconds(5), "the second sender") { await second.value }
        #expect(failures.value == [.goAway])
        #expect(secondResult == .goAway)
        let log = try await handler.waitForClose()
        #expect(log.closeCount == 1)
        #expect(log.closeCode == .goAway)
        await settle(clientLoop)
        #expect(handler.log.value.closeCount == 1)
        #expect(failures.value.count == 1)

        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("a graceful close fails waiting sends with connectionClosed")
    func gracefulCloseFailsWaitingSends() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "graceful-wait-server")
        let clientLoop = EventLoop(name: "graceful-wait-client")
        let server = try await TestServer.start(
            .tcp(host: "127.0.0.1", port: 0), group: serverGroup, pauseReading: true)
        var options = ConnectionOptions()
        options.gracefulCloseTimeout = .milliseconds(100)
        let (connection, handler) = try await connectAndStart(server.endpoint, on: clientLoop, options: options)
        let (producer, failures) = try await startStalledProducer(connection, handler: handler)
        connection.close(.graceful)
        try await within(.seconds(5), "the producer") { await producer.value }
        #expect(failures.value == [.connectionClosed])
        // The peer never reads, so the graceful close gives up after its timeout.
        let log = try await handler.waitForClose()
        #expect(log.closeCount == 1)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("a cancelled send stops waiting with cancelled and writes nothing")
    func cancelledSend() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "cancel-send-server")
        let clientLoop = EventLoop(name: "cancel-send-client")
        let server = try await TestServer.start(
            .tcp(host: "127.0.0.1", port: 0), group: serverGroup, pauseReading: true)
        let (connection, handler) = try await connectAndStart(server.endpoint, on: clientLoop)
        let (producer, failures) = try await startStalledProducer(connection, handler: handler)
        producer.cancel()
        try await within(.seconds(5), "the cancelled producer") { await producer.value }
        #expect(failures.value == [.cancelled])
        let buffered = await onLoop(clientLoop) { connection.bufferedWriteBytes }
        #expect(buffered <= ConnectionOptions().writeBufferHighWatermark + (64 << 10))
        connection.close(.immediately)
        try await handler.waitForClose()
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("shutting a loop down closes its connections and listeners with shutdown, exactly once")
    func loopShutdown() async throws {
        let peerGroup = EventLoopGroup(loopCount: 1, name: "shutdown-peer")
        let doomedGroup = EventLoopGroup(loopCount: 1, name: "shutdown-doomed")
        let doomed = doomedGroup.loops[0]
        let peer = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: peerGroup, pauseReading: true)
        // Two connections on the doomed loop, one of them with a suspended send, and a listener.
        let (first, firstHandler) = try await connectAndStart(peer.endpoint, on: doomed)
        let (second, secondHandler) = try await connectAndStart(peer.endpoint, on: doomed)
        let (producer, failures) = try await startStalledProducer(second, handler: secondHandler)
        // Its port stays the test's after it closes: refused, never another test's listener.
        let reserved = try ReservedPort()
        defer { reserved.release() }
        let doomedListener = try await Listener.bind(
            to: .tcp(host: "127.0.0.1", port: reserved.port), group: doomedGroup, reusePort: true, tls: nil
        ) { $0.close() }
        let (peerOfFirst, peerHandlerOfFirst) = try await peer.connection(0)

        doomed.shutdown()
        let firstLog = try await firstHandler.waitForClose()
        let secondLog = try await secondHandler.waitForClose()
        try await within(.seconds(5), "the producer") { await producer.value }
        #expect(firstLog.closeCode == .shutdown)
        #expect(secondLog.closeCode == .shutdown)
        #expect(failures.value == [.shutdown])
        #expect(firstLog.callbacksOffLoop == 0)
        peerOfFirst.eventLoop.execute { peerOfFirst.resumeReading() }
        let peerLog = try await peerHandlerOfFirst.waitForClose()
        #expect(peerLog.closedCleanly, "the peer sees end of stream")

        await doomed.shutdownAndWait()
        #expect(firstHandler.log.value.closeCount == 1)
        #expect(secondHandler.log.value.closeCount == 1)
        // The listener is closed: nothing accepts on its port any more.
        let probeLoop = EventLoop(name: "shutdown-probe")
        let refused = try await within(.seconds(5), "connect to the closed listener") { () async -> LongLinkError? in
            do throws(LongLinkError) {
                _ = try await Connection.connect(
                    to: .tcp(host: "127.0.0.1", port: doomedListener.localAddress.port!), on: probeLoop)
                return nil
            } catch {
                return error
            }
        }
        #expect(refused?.code == .connectionRefused)
        // Sends and closes after shutdown are harmless.
        await #expect(throws: LongLinkError.self) { try await first.send([1]) }
        first.close()
        doomedListener.close()

        peer.listener.close()
        await probeLoop.shutdownAndWait()
        await peerGroup.shutdownAndWait()
    }

    @Test("bytes and the close that arrive before start(handler:) are delivered after it, in order")
    func nothingLostBeforeStart() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "early-server")
        let clientLoop = EventLoop(name: "early-client")
        let greeting = patternBytes(from: 0, count: 5_000)
        let serverHandlers = Watched<[RecordingHandler]>([])
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0), group: serverGroup) {
            connection in
            let handler = RecordingHandler()
            connection.start(handler: handler)
            connection.write(greeting)
            connection.close(.graceful)
            serverHandlers.update { $0.append(handler) }
        }
        let connection = try await within(.seconds(5), "connect") {
            try await Connection.connect(to: .tcp(host: "127.0.0.1", port: listener.localAddress.port!), on: clientLoop)
        }
        let serverHandler = try await serverHandlers.wait("the server's handler") { !$0.isEmpty }[0]
        try await serverHandler.waitForClose()
        await roundTrips(clientLoop, 5)
        let handler = RecordingHandler()
        await onLoop(clientLoop) { connection.start(handler: handler) }
        let log = try await handler.waitForClose()
        #expect(log.bytes == greeting)
        #expect(log.closeCount == 1)
        #expect(log.closedCleanly)
        listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("closing a listener stops accepting; accepted connections keep working")
    func listenerClose() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "listener-close-server")
        let clientLoop = EventLoop(name: "listener-close-client")
        // Its port stays the test's after the listener closes: refused, never another test's listener.
        let reserved = try ReservedPort()
        defer { reserved.release() }
        let server = try await TestServer.start(
            .tcp(host: "127.0.0.1", port: reserved.port), group: serverGroup, reusePort: true
        ) { RecordingHandler(echo: true) }
        let (connection, handler) = try await connectAndStart(server.endpoint, on: clientLoop)
        server.listener.close()
        server.listener.close()
        await roundTrips(serverGroup.loops[0])
        try await connection.send([1, 2, 3])
        #expect(try await handler.waitForBytes(3).bytes == [1, 2, 3])
        let refused = try await within(.seconds(5), "connect to the closed listener") { () async -> LongLinkError? in
            do throws(LongLinkError) {
                _ = try await Connection.connect(to: server.endpoint, on: clientLoop)
                return nil
            } catch {
                return error
            }
        }
        #expect(refused?.code == .connectionRefused)
        connection.close(.immediately)
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("the handler is released after didCloseWith")
    func handlerReleased() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "release-server")
        let clientLoop = EventLoop(name: "release-client")
        let server = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: serverGroup)
        let connection = try await within(.seconds(5), "connect") {
            try await Connection.connect(to: server.endpoint, on: clientLoop)
        }
        // A handler that holds its connection (a cycle) must still be freed once the connection closed.
        final class CyclicHandler: ConnectionHandler, @unchecked Sendable {
            var connection: Connection?
            let closed: Watched<Int>
            init(_ closed: Watched<Int>) { self.closed = closed }
            func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {}
            func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
                closed.update { $0 += 1 }
            }
        }
        let closed = Watched(0)
        let weakHandler = await onLoop(clientLoop) { () -> WeakBox in
            let handler = CyclicHandler(closed)
            handler.connection = connection
            connection.start(handler: handler)
            return WeakBox(handler)
        }
        #expect(weakHandler.isAlive)
        connection.close()
        try await closed.wait("didCloseWith") { $0 == 1 }
        await roundTrips(clientLoop)
        #expect(!weakHandler.isAlive)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    /// The server's last frame (a `GoAway`, say) followed by a graceful close while the client still
    /// sends: the client reads that frame, then a clean end of stream. Closing the socket with the
    /// client's bytes unread would reset it, and the reset would discard the frame before the
    /// client read it.
    @Test("a graceful close lingers: the peer reads the last bytes although it kept sending")
    func gracefulCloseLingers() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "linger-server")
        let clientLoop = EventLoop(name: "linger-client")
        let server = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: serverGroup)
        let (connection, handler) = try await connectAndStart(server.endpoint, on: clientLoop)
        let (serverConnection, serverHandler) = try await server.connection()
        try await connection.send([1])
        try await serverHandler.waitForBytes(1)
        // The server reads no more; the client reads nothing until the server has closed.
        await onLoop(serverConnection.eventLoop) { serverConnection.pauseReading() }
        await onLoop(clientLoop) { connection.pauseReading() }
        try await connection.send([UInt8](repeating: 2, count: 4_096))
        await onLoop(serverConnection.eventLoop) {
            serverConnection.write(Array("BYE".utf8))
            serverConnection.close(.graceful)
        }
        // Past the point where the server's kernel would have answered the late bytes with a reset.
        await roundTrips(serverConnection.eventLoop, 5)
        await onLoop(clientLoop) { connection.resumeReading() }
        let log = try await handler.waitForClose()
        #expect(log.bytes == Array("BYE".utf8))
        #expect(log.closedCleanly, "\(String(describing: log.closeError))")
        // The client's end of stream ends the server's wait well before its graceful timeout.
        let serverLog = try await serverHandler.waitForClose(.seconds(1))
        #expect(serverLog.closedCleanly)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }
}

/// A weak reference to a handler, readable from any thread.
final class WeakBox: @unchecked Sendable {
    private let lock = Locked(())
    private weak var object: AnyObject?

    init(_ object: AnyObject) {
        self.object = object
    }

    var isAlive: Bool {
        lock.withLock { _ in object != nil }
    }
}

import LongLinkCore
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

@Suite("Writing, backpressure and reading", .sharedMachine)
struct DataFlowTests {
    @Test("1,000 small writes in one loop iteration reach the peer intact in a few system calls")
    func coalescedWrites() async throws {
        // All of it coalesces until the end of the iteration.
        let pair = try await ConnectedPair.start("coalesce", eagerFlushBytes: 1 << 20)
        let (clientLoop, connection, serverHandler) = (pair.clientLoop, pair.connection, pair.serverHandler)

        let frameSize = 36
        let frames = 1_000
        let before = await onLoop(clientLoop) { connection.statistics.writeCalls }
        await onLoop(clientLoop) {
            for index in 0..<frames {
                if index.isMultiple(of: 2) {
                    connection.write(patternBytes(from: index * frameSize, count: frameSize))
                } else {
                    connection.write { buffer in
                        buffer.append(contentsOf: patternBytes(from: index * frameSize, count: frameSize))
                    }
                }
            }
            // Nothing is written before the end of the iteration.
            #expect(connection.bufferedWriteBytes == frames * frameSize)
        }
        let log = try await serverHandler.waitForBytes(frames * frameSize)
        #expect(log.bytes == patternBytes(from: 0, count: frames * frameSize))
        let (writeCalls, bytesWritten, buffered) = await onLoop(clientLoop) {
            (connection.statistics.writeCalls, connection.statistics.bytesWritten, connection.bufferedWriteBytes)
        }
        #expect(writeCalls - before <= 2, "1,000 frames went out in \(writeCalls - before) system calls")
        #expect(bytesWritten == frames * frameSize)
        #expect(buffered == 0)
        await pair.stop()
    }

    @Test("past eagerFlushBytes, queued bytes leave at once, before the loop's iteration ends")
    func eagerFlush() async throws {
        let pair = try await ConnectedPair.start("eager", eagerFlushBytes: 4_096)
        let (clientLoop, connection, serverHandler) = (pair.clientLoop, pair.connection, pair.serverHandler)
        let total = 36_000
        let receivedDuringIteration = await onLoop(clientLoop) { () -> Int in
            for start in stride(from: 0, to: total, by: 36) {
                connection.write(patternBytes(from: start, count: 36))
            }
            // Never more than one threshold's worth waits for the end of the iteration.
            #expect(connection.bufferedWriteBytes < 4_096)
            // Still inside the iteration: the peer (on its own loop) gets the eager writes now.
            // Bounded: without eager writes nothing would arrive until this closure returns.
            let clock = ContinuousClock()
            let giveUp = clock.now.advanced(by: .seconds(5))
            while serverHandler.log.value.byteCount < total - 4_096, clock.now < giveUp {}
            return serverHandler.log.value.byteCount
        }
        #expect(receivedDuringIteration >= total - 4_096)
        let log = try await serverHandler.waitForBytes(total)
        #expect(log.bytes == patternBytes(from: 0, count: total))
        await pair.stop()
    }

    @Test("send waits while the peer does not read; buffered bytes stay near the high watermark; all arrive in order")
    func backpressure() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "backpressure-server")
        let clientLoop = EventLoop(name: "backpressure-client")
        let server = try await TestServer.start(
            .tcp(host: "127.0.0.1", port: 0), group: serverGroup, pauseReading: true
        ) {
            RecordingHandler(checkPattern: true)
        }
        let options = ConnectionOptions()
        let (connection, clientHandler) = try await connectAndStart(server.endpoint, on: clientLoop, options: options)
        let (serverConnection, serverHandler) = try await server.connection()

        // Sample the client's queue on its loop while the test runs.
        let maxBuffered = Watched(0)
        let sampling = Locked(true)
        @Sendable func sample() {
            let buffered = connection.bufferedWriteBytes
            maxBuffered.update { $0 = max($0, buffered) }
            if sampling.withLock({ $0 }) {
                clientLoop.scheduleTimer(after: .milliseconds(1), sample)
            }
        }
        clientLoop.execute(sample)

        let chunk = 64 << 10
        let total = 32 << 20
        let sent = Watched(0)
        let producer = Task {
            for start in stride(from: 0, to: total, by: chunk) {
                try await connection.send(patternBytes(from: start, count: chunk))
                sent.update { $0 += chunk }
            }
        }
        // The peer reads nothing: the kernel buffers fill, then ours, then send suspends.
        try await clientHandler.log.wait("isWritable to turn false") { $0.writabilityChanges.contains(false) }
        // Once a send waits, every earlier one has finished (the producer sends one at a time).
        try await waitForSuspendedSend(connection)
        let stalledAt = sent.value
        await roundTrips(clientLoop, 5)
        let (writable, buffered) = await onLoop(clientLoop) { (connection.isWritable, connection.bufferedWriteBytes) }
        #expect(!writable)
        #expect(sent.value == stalledAt, "no send completes while the connection is not writable")
        #expect(await onLoop(clientLoop) { connection.waitingSendCount } == 1)
        #expect(sent.value < total)
        #expect(buffered >= options.writeBufferHighWatermark)
        #expect(buffered <= options.writeBufferHighWatermark + chunk)

        // The peer starts reading: everything arrives, in order.
        serverConnection.eventLoop.execute { serverConnection.resumeReading() }
        try await within(.seconds(30), "the producer") { try await producer.value }
        let log = try await serverHandler.waitForBytes(total, .seconds(30))
        sampling.withLock { $0 = false }
        #expect(log.byteCount == total)
        #expect(log.patternMismatches == 0)
        #expect(maxBuffered.value <= options.writeBufferHighWatermark + chunk)
        let changes = clientHandler.log.value.writabilityChanges
        #expect(changes.first == false)
        #expect(changes.last == true)
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0 != $1 }, "changes alternate: \(changes)")

        connection.close()
        try await serverHandler.waitForClose()
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("no bytes are delivered while reading is paused, all of them after it resumes")
    func pauseAndResume() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "pause-server")
        let clientLoop = EventLoop(name: "pause-client")
        let server = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: serverGroup)
        let connection = try await within(.seconds(5), "connect") {
            try await Connection.connect(to: server.endpoint, on: clientLoop)
        }
        let handler = RecordingHandler()
        await onLoop(clientLoop) {
            connection.start(handler: handler)
            connection.pauseReading()
        }
        let (serverConnection, _) = try await server.connection()
        let payload = patternBytes(from: 0, count: 100_000)
        try await serverConnection.send(payload)
        // Wait until the kernel took every byte: on loopback they are then in the client's receive buffer.
        let serverLoop = serverConnection.eventLoop
        for _ in 0..<200 {
            let written = await onLoop(serverLoop) { serverConnection.statistics.bytesWritten }
            if written == payload.count {
                break
            }
            await roundTrips(serverLoop, 1)
        }
        #expect(await onLoop(serverLoop) { serverConnection.statistics.bytesWritten } == payload.count)
        await roundTrips(clientLoop, 10)
        #expect(handler.log.value.byteCount == 0, "nothing delivered while paused")
        #expect(await onLoop(clientLoop) { connection.statistics.readCalls } == 0)

        await onLoop(clientLoop) { connection.resumeReading() }
        let log = try await handler.waitForBytes(payload.count)
        #expect(log.bytes == payload)

        // Pausing again in the middle of a stream holds the rest back.
        await onLoop(clientLoop) { connection.pauseReading() }
        try await serverConnection.send(payload)
        await roundTrips(clientLoop, 10)
        #expect(handler.log.value.byteCount == payload.count)
        await onLoop(clientLoop) { connection.resumeReading() }
        try await handler.waitForBytes(2 * payload.count)

        connection.close(.immediately)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }

    @Test("a graceful close writes everything queued, then the peer sees end of stream")
    func gracefulCloseFlushes() async throws {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "graceful-server")
        let clientLoop = EventLoop(name: "graceful-client")
        // The server reads nothing at first, so the kernel buffers fill and the client's queue keeps the rest.
        let server = try await TestServer.start(
            .tcp(host: "127.0.0.1", port: 0), group: serverGroup, pauseReading: true
        ) {
            RecordingHandler(checkPattern: true)
        }
        var options = ConnectionOptions()
        options.gracefulCloseTimeout = .seconds(30)
        let (connection, clientHandler) = try await connectAndStart(server.endpoint, on: clientLoop, options: options)
        let (serverConnection, serverHandler) = try await server.connection()
        let total = 32 << 20
        let queuedWhenClosing = await onLoop(clientLoop) {
            for start in stride(from: 0, to: total, by: 1 << 20) {
                connection.write(patternBytes(from: start, count: 1 << 20))
            }
            connection.flush()
            let queued = connection.bufferedWriteBytes
            connection.close(.graceful)
            // Closing: no more writes are taken.
            connection.write([1, 2, 3])
            #expect(connection.isClosed)
            return queued
        }
        #expect(queuedWhenClosing > 0, "the kernel could not take 32 MiB at once")
        serverConnection.eventLoop.execute { serverConnection.resumeReading() }
        let log = try await serverHandler.waitForClose(.seconds(30))
        #expect(log.byteCount == total)
        #expect(log.patternMismatches == 0)
        #expect(log.closedCleanly)
        let clientLog = try await clientHandler.waitForClose()
        #expect(clientLog.closeCount == 1)
        #expect(clientLog.closedCleanly)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }
}

/// A client connection on a loop of its own, to a recording server on another loop.
private struct ConnectedPair {
    let serverGroup: EventLoopGroup
    let clientLoop: EventLoop
    let server: TestServer
    let connection: Connection
    let serverHandler: RecordingHandler

    static func start(_ name: String, eagerFlushBytes: Int) async throws -> ConnectedPair {
        let serverGroup = EventLoopGroup(loopCount: 1, name: "\(name)-server")
        let clientLoop = EventLoop(name: "\(name)-client")
        let server = try await TestServer.start(.tcp(host: "127.0.0.1", port: 0), group: serverGroup)
        var options = ConnectionOptions()
        options.eagerFlushBytes = eagerFlushBytes
        let (connection, _) = try await connectAndStart(server.endpoint, on: clientLoop, options: options)
        let (_, serverHandler) = try await server.connection()
        return ConnectedPair(
            serverGroup: serverGroup, clientLoop: clientLoop, server: server, connection: connection,
            serverHandler: serverHandler)
    }

    func stop() async {
        connection.close(.immediately)
        server.listener.close()
        await clientLoop.shutdownAndWait()
        await serverGroup.shutdownAndWait()
    }
}

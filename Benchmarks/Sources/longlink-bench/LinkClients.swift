import BenchCLISupport
import Foundation
import LongLink
import LongLinkWire

/// `longlink-bench _links-clients`: the "idle phones" of `longlink-bench links`, in a process of
/// their own (this executable again), so that their descriptors and CPU are not the server's.
///
/// Each link is a bare protocol client on one plain thread (`poll`, non-blocking sockets, no tasks):
/// against LongLink it sends `Hello`, logs in as its own principal (`link-<index>`), subscribes to a
/// topic, sends `Sync`, asks the server once (`seed`) for ``heldPushes`` reliable pushes it never
/// acknowledges, and pings at the interval the `Welcome` gives. Against Redis it sends `PING`;
/// against NATS `CONNECT` and `PING`; then nothing. Each socket is bound to a source address of
/// its own part of 127.0.0.0/8 before it connects, so that ephemeral ports do not run out. A cut
/// link comes back after the library's ``Backoff`` (default policy, full jitter), as the client's
/// supervisor waits.
///
/// Commands on standard input, one a line: `mark` (forget when links were synced and the attempts
/// seen so far; answers `marked`), `report` (answers `report …` now), `pings` (answers `pings N
/// INTERVAL`: pings sent so far and the heartbeat interval in seconds), `quit`. The process prints
/// `ready N` once every link is synced the first time and `report …` once every link is synced
/// again after `mark`.
enum LinkClients {
    static let scenarioName = "_links-clients"
    /// Reliable pushes each link holds unacknowledged.
    static let heldPushes = 3
    /// The topic every link subscribes to.
    static let topic = "quotes"
    /// Links sharing one source address (at most 250 per /24 of 127.x.y.0).
    static let linksPerAddress = 50

    static let kindVariable = "LONGLINK_BENCH_LINKS_KIND"
    static let portVariable = "LONGLINK_BENCH_LINKS_PORT"
    static let firstVariable = "LONGLINK_BENCH_LINKS_FIRST"
    static let countVariable = "LONGLINK_BENCH_LINKS_COUNT"
    /// For a breakdown of the server's memory per link, by hand: each LongLink link stops after
    /// `Welcome` (`hello`), the login (`login`), the subscription (`subscribe`) or `Sync` with nothing
    /// held (`sync`); unset (`full`), the whole link. Passed down from the parent's environment.
    static let stageVariable = "LONGLINK_BENCH_LINKS_STAGE"

    /// Whom the links talk to.
    enum Kind: String, Sendable {
        case longLink = "longlink"
        case redis
        case nats
    }

    /// The source address of link `index`: 127.a.b.c, c in 1...250, ``linksPerAddress`` links each.
    static func sourceAddress(of index: Int) -> in_addr_t {
        let group = index / linksPerAddress
        let a = 1 + group / (256 * 250)
        let b = (group / 250) % 256
        let c = group % 250 + 1
        return in_addr_t(UInt32(127 << 24 | a << 16 | b << 8 | c).bigEndian)
    }

    /// The child's side: runs the links named in the environment until `quit` or the end of standard input.
    static func main() -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        guard let kind = environment[kindVariable].flatMap(Kind.init),
            let port = environment[portVariable].flatMap({ Int($0) }),
            let first = environment[firstVariable].flatMap({ Int($0) }),
            let count = environment[countVariable].flatMap({ Int($0) })
        else {
            Terminal.standardError.line("longlink-bench \(scenarioName): internal; run by 'longlink-bench links'")
            return ExitStatus.usage
        }
        ProcessUsage.raiseOpenFileLimit(to: count + 64)
        signal(SIGPIPE, SIG_IGN)
        var loop = LinkClientLoop(kind: kind, port: port, first: first, count: count)
        loop.run()
        return ExitStatus.success
    }

    /// Monotonic time in seconds: CLOCK_MONOTONIC is one clock for every process of the machine,
    /// so the parent compares these with its own.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// One link's state in ``LinkClientLoop``.
struct ClientLink {
    enum Phase {
        /// No socket; connects at `retryAt`.
        case waiting
        /// Non-blocking connect under way.
        case connecting
        /// Connected; waiting for `Welcome` (Redis: `+PONG`, NATS: `PONG`).
        case greeting
        /// `login` sent, waiting for its response.
        case loggingIn
        /// Logged in; subscription, `Sync` (and the first time `seed`) sent; waiting for the held pushes.
        case syncing
        /// Logged in, subscribed, every held push received on this connection.
        case synced
    }

    var fd: Int32 = -1
    var phase = Phase.waiting
    var retryAt = 0.0
    var failures = 0
    var decoder = FrameDecoder()
    var output: [UInt8] = []
    /// Held pushes received on this connection (distinct seqs).
    var seqs: Set<UInt64> = []
    var subscribed = false
    var seeded = false
    var heartbeat = 15.0
    var nextPing = Double.infinity
    /// When the link was last synced after `mark`.
    var syncedAt: Double?
    /// Bytes of a text protocol (Redis, NATS) not yet matched.
    var text: [UInt8] = []
}

/// The poll loop of ``LinkClients``: every link of the process on one thread.
struct LinkClientLoop {
    let kind: LinkClients.Kind
    let port: Int
    let first: Int
    var links: [ClientLink]
    let backoff = Backoff()
    /// ``LinkClients/stageVariable``: where a LongLink link counts as synced.
    let stage = ProcessInfo.processInfo.environment[LinkClients.stageVariable] ?? "full"
    /// Connects under way at most at once: a burst beyond the listener's backlog would only be dropped.
    let maxConnecting = 512
    var connecting = 0
    var synced = 0
    var readyPrinted = false
    var marked = false
    var reportPrinted = false
    /// Connection attempts since `mark` (monotonic seconds).
    var attempts: [Double] = []
    /// Pings sent since the process started.
    var pingsSent = 0
    var frames: [Frame] = []
    var input: [UInt8] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)

    init(kind: LinkClients.Kind, port: Int, first: Int, count: Int) {
        self.kind = kind
        self.port = port
        self.first = first
        links = Array(repeating: ClientLink(), count: count)
    }

    mutating func run() {
        var pollFDs: [pollfd] = []
        var owners: [Int] = []
        while true {
            let now = LinkClients.now()
            startDue(now)
            sendPings(now)
            pollFDs.removeAll(keepingCapacity: true)
            owners.removeAll(keepingCapacity: true)
            pollFDs.append(pollfd(fd: 0, events: Int16(POLLIN), revents: 0))
            owners.append(-1)
            var anyWaiting = false
            for index in links.indices {
                let link = links[index]
                if link.fd < 0 {
                    anyWaiting = true
                    continue
                }
                var events = Int16(POLLIN)
                if link.phase == .connecting || !link.output.isEmpty { events |= Int16(POLLOUT) }
                pollFDs.append(pollfd(fd: link.fd, events: events, revents: 0))
                owners.append(index)
            }
            let timeout: Int32 = anyWaiting ? 10 : 250
            let ready = poll(&pollFDs, nfds_t(pollFDs.count), timeout)
            guard ready >= 0 || errno == EINTR else { return }
            guard ready > 0 else { continue }
            for slot in pollFDs.indices where pollFDs[slot].revents != 0 {
                let owner = owners[slot]
                if owner < 0 {
                    guard readCommands() else { return }
                    continue
                }
                handle(owner, revents: pollFDs[slot].revents)
            }
            finishIfDone()
        }
    }

    // MARK: Connecting

    private mutating func startDue(_ now: Double) {
        for index in links.indices where links[index].phase == .waiting && links[index].retryAt <= now {
            guard connecting < maxConnecting else { return }
            connect(index, now)
        }
    }

    private mutating func connect(_ index: Int, _ now: Double) {
        if marked { attempts.append(now) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return fail(index, now) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var source = sockaddr_in()
        source.sin_family = sa_family_t(AF_INET)
        source.sin_addr.s_addr = LinkClients.sourceAddress(of: first + index)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(port)).bigEndian
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let result = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        links[index].fd = fd
        guard bound == 0, result == 0 || errno == EINPROGRESS else { return fail(index, now) }
        links[index].phase = .connecting
        connecting += 1
        if result == 0 { connected(index, now) }
    }

    private mutating func connected(_ index: Int, _ now: Double) {
        connecting -= 1
        links[index].phase = .greeting
        links[index].decoder = FrameDecoder()
        links[index].text.removeAll()
        links[index].seqs.removeAll()
        links[index].subscribed = false
        switch kind {
        case .longLink:
            Frame.hello(Frame.Hello(clientID: "link-\(first + index)")).encodeDelimited(into: &links[index].output)
        case .redis: links[index].output.append(contentsOf: Array("PING\r\n".utf8))
        case .nats: links[index].output.append(contentsOf: Array("CONNECT {\"verbose\":false}\r\nPING\r\n".utf8))
        }
        flush(index, now)
    }

    /// Closes the socket and schedules the next attempt after the backoff's delay.
    private mutating func fail(_ index: Int, _ now: Double) {
        if links[index].phase == .connecting { connecting -= 1 }
        if links[index].phase == .synced { synced -= 1 }
        if links[index].fd >= 0 { close(links[index].fd) }
        links[index].fd = -1
        links[index].phase = .waiting
        links[index].output.removeAll()
        links[index].nextPing = .infinity
        links[index].failures += 1
        let delay = backoff.delay(forAttempt: links[index].failures - 1, random: .random(in: 0...1))
        links[index].retryAt = now + Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
    }

    // MARK: Reading and writing

    private mutating func handle(_ index: Int, revents: Int16) {
        let now = LinkClients.now()
        if links[index].phase == .connecting {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(links[index].fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0, revents & Int16(POLLOUT) != 0 else { return fail(index, now) }
            connected(index, now)
            return
        }
        if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            let count = read(links[index].fd, buffer.baseAddress, buffer.count)
            if count < 0, errno == EAGAIN || errno == EINTR { return }
            guard count > 0 else { return fail(index, now) }
            received(index, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now)
        }
        if links[index].fd >= 0, !links[index].output.isEmpty { flush(index, now) }
    }

    private mutating func flush(_ index: Int, _ now: Double) {
        let written = links[index].output.withUnsafeBytes { write(links[index].fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno != EAGAIN && errno != EINTR { fail(index, now) }
            return
        }
        links[index].output.removeFirst(written)
    }

    private mutating func received(_ index: Int, _ bytes: UnsafeRawBufferPointer, _ now: Double) {
        guard kind == .longLink else { return receivedText(index, bytes, now) }
        do {
            try links[index].decoder.decode(bytes, into: &frames)
        } catch {
            frames.removeAll(keepingCapacity: true)
            return fail(index, now)
        }
        let all = frames
        frames.removeAll(keepingCapacity: true)
        for frame in all where links[index].fd >= 0 { handle(index, frame, now) }
    }

    private mutating func handle(_ index: Int, _ frame: Frame, _ now: Double) {
        switch frame {
        case .welcome(let welcome):
            if welcome.heartbeatMilliseconds > 0 {
                links[index].heartbeat = Double(welcome.heartbeatMilliseconds) / 1_000
            }
            links[index].nextPing = now + links[index].heartbeat
            links[index].phase = .loggingIn
            guard stage != "hello" else { return becameSynced(index, now) }
            request(index, id: "login", method: "login", payload: Array("link-\(first + index)".utf8))
        case .response(let response):
            guard response.status == nil else { return fail(index, now) }
            switch response.requestID {
            case "login":
                guard stage != "login" else { return becameSynced(index, now) }
                links[index].phase = .syncing
                request(index, id: "subscribe", method: "subscribe", payload: Array(LinkClients.topic.utf8))
                if stage != "subscribe" { Frame.sync(Frame.Sync()).encodeDelimited(into: &links[index].output) }
                if stage == "full", !links[index].seeded { request(index, id: "seed", method: "seed", payload: []) }
            case "subscribe":
                links[index].subscribed = true
            case "seed":
                links[index].seeded = true
            default: break
            }
        case .push(let push) where push.seq > 0:
            links[index].seqs.insert(push.seq)
        case .ping(let ping):
            Frame.pong(Frame.Pong(nonce: ping.nonce)).encodeDelimited(into: &links[index].output)
        default: break
        }
        if links[index].phase == .syncing, links[index].subscribed,
            stage != "full" || links[index].seqs.count >= LinkClients.heldPushes
        {
            becameSynced(index, now)
        }
    }

    private mutating func request(_ index: Int, id: String, method: String, payload: [UInt8]) {
        Frame.request(Frame.Request(requestID: id, method: method, payload: payload, timeoutMilliseconds: 30_000))
            .encodeDelimited(into: &links[index].output)
    }

    /// Redis and NATS: greeted once `PONG` arrives; NATS's own `PING`s are answered.
    private mutating func receivedText(_ index: Int, _ bytes: UnsafeRawBufferPointer, _ now: Double) {
        links[index].text.append(contentsOf: bytes)
        let text = String(decoding: links[index].text, as: UTF8.self)
        if kind == .nats, text.contains("PING\r\n") {
            links[index].output.append(contentsOf: Array("PONG\r\n".utf8))
        }
        if links[index].phase == .greeting, text.contains("PONG\r\n") { becameSynced(index, now) }
        if let last = links[index].text.lastIndex(of: UInt8(ascii: "\n")) {
            links[index].text.removeSubrange(...last)
        }
    }

    private mutating func becameSynced(_ index: Int, _ now: Double) {
        links[index].phase = .synced
        links[index].failures = 0
        synced += 1
        if marked, links[index].syncedAt == nil { links[index].syncedAt = now }
    }

    private mutating func sendPings(_ now: Double) {
        guard kind == .longLink else { return }
        for index in links.indices where links[index].fd >= 0 && links[index].nextPing <= now {
            links[index].nextPing = now + links[index].heartbeat
            Frame.ping(Frame.Ping(nonce: UInt64(index))).encodeDelimited(into: &links[index].output)
            pingsSent += 1
            flush(index, now)
        }
    }

    // MARK: Commands and reports

    /// Reads standard input; false at its end or on `quit`.
    private mutating func readCommands() -> Bool {
        let count = read(0, buffer.baseAddress, buffer.count)
        guard count > 0 else { return false }
        input.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        while let end = input.firstIndex(of: UInt8(ascii: "\n")) {
            let command = String(decoding: input[..<end], as: UTF8.self)
            input.removeSubrange(...end)
            switch command {
            case "mark":
                marked = true
                reportPrinted = false
                attempts.removeAll()
                for index in links.indices { links[index].syncedAt = nil }
                say("marked")
            case "report": report()
            case "pings": say("pings \(pingsSent) \(links.first?.heartbeat ?? 0)")
            case "quit": return false
            default: break
            }
        }
        return true
    }

    private mutating func finishIfDone() {
        if !readyPrinted, synced == links.count {
            readyPrinted = true
            say("ready \(synced)")
        }
        if marked, !reportPrinted, links.allSatisfy({ $0.syncedAt != nil }) { report() }
    }

    /// `report synced=N lost=P times=t,… attempts=t,…`: links synced again since `mark`, held
    /// pushes not redelivered to links not synced, sync times and attempt times (monotonic seconds).
    private mutating func report() {
        reportPrinted = true
        let times = links.compactMap(\.syncedAt)
        let lost = links.reduce(0) { $0 + ($1.syncedAt == nil ? max(0, LinkClients.heldPushes - $1.seqs.count) : 0) }
        func list(_ values: [Double]) -> String { values.map { String(format: "%.4f", $0) }.joined(separator: ",") }
        say("report synced=\(times.count) lost=\(lost) times=\(list(times)) attempts=\(list(attempts))")
    }

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

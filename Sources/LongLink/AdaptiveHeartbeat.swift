/// The parameters of an adaptive heartbeat (``HeartbeatPolicy/adaptive(_:)``).
///
/// Per network, the client starts at ``start``, a value every NAT tolerates. After
/// ``successesBeforeStep`` idle intervals survived in a row (a `Ping` sent after an interval of
/// silence was answered) it probes ``step`` higher, up to ``maximum``. When an idle link dies
/// during a probe (the NAT forgot the mapping: the heartbeat finds the link dead), the client
/// replaces the link at once, goes back to the last interval that survived, and keeps it as the
/// network's *stable* interval; after ``reprobeAfter`` it probes higher again (a NAT may have been
/// replaced). A stable interval that fails ``failuresBeforeStepDown`` times in a row steps down.
///
/// A server bounds the interval it enforces (`ServerConfiguration` minimum and maximum heartbeat,
/// 50 ms and 300 s by default): the client proposes the learned value in `Hello` and, when it
/// steps up on a live link, in a `Ping` (Protocol.md, "Changing the heartbeat on a live link").
public struct AdaptiveHeartbeat: Sendable, Hashable, Codable {
    /// The interval a network starts at, and the lowest it steps down to. Default 15 s.
    public var start: Duration = .seconds(15)
    /// How much higher each probe goes. Default 30 s.
    public var step: Duration = .seconds(30)
    /// The highest interval probed. Default 300 s (the server's default maximum).
    public var maximum: Duration = .seconds(300)
    /// Idle intervals survived in a row before a probe one step higher. Default 3.
    public var successesBeforeStep: Int = 3
    /// How long a stable interval is kept before the client probes higher again. Default 24 h.
    public var reprobeAfter: Duration = .seconds(24 * 3_600)
    /// Failures in a row of a stable interval (not a probe) before it steps down. Default 2.
    public var failuresBeforeStepDown: Int = 2
    /// How many networks are remembered; the least recently used is forgotten past it. Default 32.
    public var maxNetworks: Int = 32
    /// How long a heartbeat `Ping` may go unanswered before the link is declared dead and replaced.
    /// With a long learned interval, this (not two intervals) bounds the time to notice a link that
    /// went silent once anything is sent on it. Default 10 s.
    public var answerTimeout: Duration = .seconds(10)

    /// The defaults, with any parameter replaced.
    public init(
        start: Duration = .seconds(15), step: Duration = .seconds(30), maximum: Duration = .seconds(300),
        successesBeforeStep: Int = 3, reprobeAfter: Duration = .seconds(24 * 3_600),
        failuresBeforeStepDown: Int = 2, maxNetworks: Int = 32, answerTimeout: Duration = .seconds(10)
    ) {
        self.start = start
        self.step = step
        self.maximum = maximum
        self.successesBeforeStep = successesBeforeStep
        self.reprobeAfter = reprobeAfter
        self.failuresBeforeStepDown = failuresBeforeStepDown
        self.maxNetworks = maxNetworks
        self.answerTimeout = answerTimeout
    }

    /// Why the parameters cannot be used, or nil.
    var problem: String? {
        if start < .milliseconds(10) { return "adaptive heartbeat start must be at least 10 ms" }
        if step <= .zero { return "adaptive heartbeat step must be positive" }
        if maximum < start { return "adaptive heartbeat maximum must be at least its start" }
        if successesBeforeStep < 1 { return "adaptive heartbeat successesBeforeStep must be at least 1" }
        if reprobeAfter <= .zero { return "adaptive heartbeat reprobeAfter must be positive" }
        if failuresBeforeStepDown < 1 { return "adaptive heartbeat failuresBeforeStepDown must be at least 1" }
        if maxNetworks < 1 || maxNetworks > 1_024 { return "adaptive heartbeat maxNetworks must be 1 to 1,024" }
        if answerTimeout <= .zero { return "adaptive heartbeat answerTimeout must be positive" }
        return nil
    }
}

/// What one direction of a proxied link does to the bytes passing through it.
struct DirectionConditions: Sendable, Hashable {
    var blackHoled = false
    var paused = false
    var latency: Duration = .zero
    var jitter: Duration = .zero
    var bytesPerSecond: Int?
    var chunkSize: Int?
    var mergeWindow: Duration?

    /// True when bytes can go straight through, untouched and undelayed.
    var isTransparent: Bool {
        !blackHoled && latency == .zero && jitter == .zero && bytesPerSecond == nil && chunkSize == nil
            && mergeWindow == nil
    }
}

/// The conditions of both directions of a link (or the proxy's defaults for new links).
struct LinkConditions: Sendable, Hashable {
    var upstream = DirectionConditions()
    var downstream = DirectionConditions()
    /// The NAT's idle timeout (for both directions together); nil: no NAT.
    var natIdleTimeout: Duration?
    var natForgotten = NetworkFault.ForgottenMapping.drop

    /// Applies a condition-changing fault; faults that are actions (cut, reset, refusal) change nothing.
    mutating func apply(_ kind: NetworkFault.Kind) {
        switch kind {
        case .blackHole(let direction):
            update(direction) { $0.blackHoled = true }
        case .restoreForwarding(let direction):
            update(direction) { $0.blackHoled = false }
        case .latency(let latency, let jitter, let direction):
            update(direction) {
                $0.latency = latency
                $0.jitter = jitter
            }
        case .throttle(let rate, let direction):
            update(direction) { $0.bytesPerSecond = rate }
        case .splitWrites(let size, let direction):
            update(direction) { $0.chunkSize = size }
        case .mergeWrites(let window, let direction):
            update(direction) { $0.mergeWindow = window }
        case .pauseReading(let direction):
            update(direction) { $0.paused = true }
        case .resumeReading(let direction):
            update(direction) { $0.paused = false }
        case .natIdleTimeout(let timeout, let forgotten):
            natIdleTimeout = timeout
            natForgotten = forgotten
        case .clear:
            self = LinkConditions()
        case .cut, .reset, .refuseConnections, .acceptConnections:
            break
        }
    }

    private mutating func update(_ direction: FaultProxy.Direction, _ body: (inout DirectionConditions) -> Void) {
        if direction.contains(.upstream) {
            body(&upstream)
        }
        if direction.contains(.downstream) {
            body(&downstream)
        }
    }
}

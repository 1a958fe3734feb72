/// Something a ``NetworkFault`` can be applied to: a whole ``FaultProxy`` or one ``ProxiedConnection``.
///
/// The convenience methods below all go through ``apply(_:)``. Every call returns once the fault is in effect
/// on the event loops involved, so bytes sent after it returns are subject to it. Apply faults to one target
/// from one task at a time.
public protocol FaultTarget: Sendable {
    /// Applies `fault`, and its ``NetworkFault/reversal`` after its ``NetworkFault/duration`` when it has one.
    /// Returns once the fault is in effect.
    func apply(_ fault: NetworkFault) async
}

extension FaultTarget {
    /// Applies ``NetworkFault/cut``: both sides closed with a FIN.
    public func cut() async {
        await apply(.cut)
    }

    /// Applies ``NetworkFault/reset``: both sides reset.
    public func reset() async {
        await apply(.reset)
    }

    /// Applies ``NetworkFault/blackHole(_:for:)``.
    public func blackHole(_ direction: FaultProxy.Direction = .both, for duration: Duration? = nil) async {
        await apply(.blackHole(direction, for: duration))
    }

    /// Applies ``NetworkFault/restoreForwarding(_:)``.
    public func restoreForwarding(_ direction: FaultProxy.Direction = .both) async {
        await apply(.restoreForwarding(direction))
    }

    /// Applies ``NetworkFault/latency(_:jitter:_:for:)``.
    public func setLatency(
        _ latency: Duration, jitter: Duration = .zero, _ direction: FaultProxy.Direction = .both,
        for duration: Duration? = nil
    ) async {
        await apply(.latency(latency, jitter: jitter, direction, for: duration))
    }

    /// Applies ``NetworkFault/throttle(bytesPerSecond:_:for:)``.
    public func throttle(
        bytesPerSecond: Int?, _ direction: FaultProxy.Direction = .both, for duration: Duration? = nil
    ) async {
        await apply(.throttle(bytesPerSecond: bytesPerSecond, direction, for: duration))
    }

    /// Applies ``NetworkFault/splitWrites(into:_:for:)``.
    public func splitWrites(
        into chunkSize: Int?, _ direction: FaultProxy.Direction = .both, for duration: Duration? = nil
    ) async {
        await apply(.splitWrites(into: chunkSize, direction, for: duration))
    }

    /// Applies ``NetworkFault/mergeWrites(window:_:for:)``.
    public func mergeWrites(
        window: Duration?, _ direction: FaultProxy.Direction = .both, for duration: Duration? = nil
    ) async {
        await apply(.mergeWrites(window: window, direction, for: duration))
    }

    /// Applies ``NetworkFault/pauseReading(_:for:)``.
    public func pauseReading(_ direction: FaultProxy.Direction = .both, for duration: Duration? = nil) async {
        await apply(.pauseReading(direction, for: duration))
    }

    /// Applies ``NetworkFault/resumeReading(_:)``.
    public func resumeReading(_ direction: FaultProxy.Direction = .both) async {
        await apply(.resumeReading(direction))
    }

    /// Applies ``NetworkFault/natIdleTimeout(_:onForgotten:for:)``.
    public func setNATIdleTimeout(
        _ timeout: Duration?, onForgotten: NetworkFault.ForgottenMapping = .drop, for duration: Duration? = nil
    ) async {
        await apply(.natIdleTimeout(timeout, onForgotten: onForgotten, for: duration))
    }

    /// Applies ``NetworkFault/clear``.
    public func clearFaults() async {
        await apply(.clear)
    }
}

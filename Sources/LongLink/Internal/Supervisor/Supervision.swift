/// What the supervisor looks at, set by the app's calls (network changes, the background, the
/// endpoint list) and by the supervisor itself.
struct Supervision {
    /// A wake-up that came while the supervisor was not waiting to retry: its next wait returns it.
    var pendingWake: RetryWake?
    /// The app is in the background (``LongLinkClient/appDidEnterBackground()``).
    var inBackground = false
    /// The supervisor knows more than one endpoint: a full server is worth leaving.
    var hasAlternatives = false
    /// What the supervisor must look at while connected: network changes
    /// (``LongLinkClient/networkDidChange()``) and the app's new endpoint lists
    /// (``LongLinkClient/setEndpoints(_:)``), counted so that a change it was too busy to be
    /// woken for is still seen.
    var changes = ChangeCounters()
    /// The app said the network is metered (cellular): re-probing may pause.
    var networkIsExpensive = false
    /// The adaptive heartbeat's learning, made on first use (nil with a fixed heartbeat).
    var adaptiveHeartbeat: AdaptiveHeartbeatState?
}

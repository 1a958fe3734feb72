/// The client's adaptive heartbeat: the learner, the network the app says it is on, and whether the
/// last link was lost answering a probe (the supervisor then replaces it at once).
struct AdaptiveHeartbeatState: Sendable {
    var learner: HeartbeatLearner
    var network: NetworkKey
    /// Set when a link died while a probe's idle `Ping` waited; taken by the supervisor.
    var lostDuringProbe = false
}

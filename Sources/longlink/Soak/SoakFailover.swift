/// A failover the soak caused: what happened, and how long from the kill until the replica served.
struct SoakFailover: Sendable {
    /// For the live output.
    var description: String
    /// From the kill until the replica served the slot.
    var took: Duration
}

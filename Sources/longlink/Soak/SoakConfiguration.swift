import LongLink
import LongLinkServer

/// How a soak run loads the client and how hard it hits the network.
struct SoakConfiguration: Sendable {
    /// How long the run lasts, faults and recovery tail included.
    var duration: Duration = .seconds(60)
    /// One request every this often.
    var requestInterval: Duration = .milliseconds(100)
    /// One reliable push emitted every this often.
    var pushInterval: Duration = .milliseconds(50)
    /// Each request's timeout.
    var requestTimeout: Duration = .seconds(3)
    /// How much later than its deadline a request may return before it counts as hung.
    var hangSlack: Duration = .seconds(1)
    /// The client's heartbeat (short, so black holes are noticed within the run).
    var heartbeat: Duration = .milliseconds(300)
    /// The client's reconnection backoff.
    var backoff: Backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(500))
    /// How long the client's credentials live (``CredentialRefresh``): the client refreshes them on
    /// the live link, and the faults include a kick for good (the session ended as "logged in
    /// elsewhere" ends it, then a login again through the provider) and a credential expiry (the
    /// provider refuses until the credential expires, then the client logs in again with a new
    /// one). Nil: no credentials, and neither fault.
    var credentialLifetime: Duration? = .seconds(6)
    /// Whether faults are injected at all.
    var injectsFaults: Bool = true
    /// The fault-free time at the end, in which every request must succeed again.
    var quietTail: Duration = .seconds(6)
    /// How much the process's resident memory may grow over the run.
    var memoryGrowthLimit: Int = 96 << 20
    /// When the run takes its baseline memory sample, once start-up and the first faults have
    /// settled (at most half the run: a shorter run takes it halfway).
    var memoryBaselineTime: Duration = .seconds(300)
    /// How much the resident memory may grow from the baseline sample to the end of the load: a
    /// run that plateaus stays within it, one that leaks per request or push does not.
    var memoryGrowthAfterBaselineLimit: Int = 16 << 20
    /// Called with the baseline memory sample when it is taken (the report has it too).
    var onMemorySample: (@Sendable (SoakMemorySample) -> Void)?
    /// TLS for the server; set it together with ``clientTLS`` to soak over TLS (the fault proxy
    /// forwards the encrypted bytes untouched). `nil`: plain TCP.
    var serverTLS: ServerTLSConfiguration?
    /// TLS for the client (its trust roots must accept ``serverTLS``'s certificate for the name
    /// `localhost` or `127.0.0.1`).
    var clientTLS: TLSConfiguration?

    /// A fleet of servers sharing their stores instead of one server; nil: one in-process server
    /// with an in-memory push store.
    var fleet: SoakFleet?

    /// One `longlink serve --data-dir` on this directory in a child process instead of a server in
    /// this process: the schedule then `kill -9`s it and starts it again on the same directory.
    /// Not with ``fleet``.
    var dataDirectory: String?

    /// The default: 60 seconds with faults.
    init() {}

    /// A configuration lasting `duration`.
    init(duration: Duration) {
        self.duration = duration
    }
}

/// A soak against a fleet: ``servers`` servers sharing the stores ``stores`` makes (for example
/// on Redis, with `LongLinkRedis`'s `ServerStores.redis`), each behind its own fault proxy, and a
/// client that knows them all. The fault schedule then crashes the server the client is on and
/// restarts it, and requests take ``workDuration`` on the server, so that crashes catch some
/// mid-execution: those may end in `DEADLINE_EXCEEDED` (their claim in the shared de-dup window
/// outlives the crash), and none may run twice.
struct SoakFleet: Sendable {
    /// How many servers (at least 2).
    var servers: Int
    /// Makes the shared stores of each server instance (each instance owns and closes its own).
    var stores: @Sendable () throws -> ServerStores
    /// How long the `work` method takes on the server.
    var workDuration: Duration = .milliseconds(200)
    /// On a Redis Cluster: kills the primary serving the soak's principal, returns once its
    /// replica has taken over, and says what happened. The schedule then kills primaries too.
    var killPrimary: (@Sendable () async throws -> SoakFailover)?

    /// A fleet of `servers` servers on the stores `stores` makes.
    init(servers: Int, stores: @escaping @Sendable () throws -> ServerStores) {
        self.servers = servers
        self.stores = stores
    }
}

import LongLinkTransport
import LongLinkWire

/// What every rule of one `longlink conform` run shares: the server's address, the bound on each
/// wait, and a run id that makes the client ids and user names of this run unique, so that a
/// second run against the same server never meets the first run's requests or pushes.
struct ConformContext: Sendable {
    /// The server under test.
    var endpoint: Endpoint
    /// The bound of each step: a connection, a reply, a GoAway.
    var timeout: Duration
    /// Random per run, in every client id and user name.
    var runID: String

    init(endpoint: Endpoint, timeout: Duration, runID: String = String(UInt64.random(in: 0...UInt64.max), radix: 36)) {
        self.endpoint = endpoint
        self.timeout = timeout
        self.runID = runID
    }

    /// A client id unique to this run and `purpose`.
    func clientID(_ purpose: String) -> String {
        "conform-\(runID)-\(purpose)"
    }

    /// A user name (at most 64 bytes) unique to this run and `purpose`.
    func user(_ purpose: String) -> String {
        String("conform-\(runID)-\(purpose)".prefix(64))
    }

    /// A new connection to the server.
    func connect() throws(ConformFailure) -> ConformLink {
        ConformLink(socket: try ConformSocket.connect(to: endpoint, within: timeout), timeout: timeout)
    }

    /// A new connection that has been welcomed, with its `Welcome`.
    func welcomed(_ purpose: String) throws(ConformFailure) -> (ConformLink, Frame.Welcome) {
        let link = try connect()
        let welcome = try link.handshake(clientID: clientID(purpose))
        return (link, welcome)
    }
}

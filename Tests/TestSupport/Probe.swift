import LongLinkServer
import Synchronization

/// Server handlers whose progress tests can observe without sleeping: they report to `events`, and
/// a gated handler waits until the test opens `gate`. Each test target builds its router on
/// ``commonRouter()`` with handlers of its own.
package final class Probe: Sendable {
    package let events = Mailbox<String>()
    package let gate = Mailbox<Void>()
    package let executions = Atomic<Int>(0)

    package init() {}

    /// `echo`; `count`, which answers its execution's number and the payload; `hang`, which runs
    /// until cancelled and reports both.
    package func commonRouter() -> Router {
        var router = Router()
        router.register("echo") { payload, _ in payload }
        router.register("count") { payload, _ in
            let n = self.executions.add(1, ordering: .relaxed).newValue
            return Array("execution \(n)".utf8) + payload
        }
        router.register("hang") { _, context in
            self.events.put("started \(context.requestID)")
            do {
                try await Task.sleep(for: .seconds(3_600))
            } catch {
                self.events.put("cancelled \(context.requestID)")
                throw error
            }
            return []
        }
        return router
    }
}

extension ServerConfiguration {
    /// A server for tests: its id `test-server`, a short drain.
    package static var testing: ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.serverID = "test-server"
        configuration.drainTimeout = .seconds(2)
        return configuration
    }
}

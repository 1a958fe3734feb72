import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting

extension LongLinkTestServer {
    /// A server whose `hold` answers its payload once `gate` lets one through, and whose `echo`
    /// answers at once: requests that stay in flight as long as a test wants.
    static func holding(until gate: Mailbox<Void>) -> LongLinkTestServer {
        LongLinkTestServer {
            var router = Router()
            router.register("hold") { payload, _ in
                try await gate.next(within: .seconds(60))
                return payload
            }
            router.register("echo") { payload, _ in payload }
            return router
        }
    }
}

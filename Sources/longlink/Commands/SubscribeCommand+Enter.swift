import LongLink
import LongLinkCLISupport
import Synchronization

extension SubscribeCommand {
    /// `--enter METHOD=JSON` (repeatable): subscriptions made at run time, once the client runs.
    static let enterOption = OptionSpec.value(
        "enter", "METHOD=JSON",
        help: "A subscription made at run time and kept (repeatable): 'room.enter={\"room\":42,\"user\":\"alice\"}'.")

    /// Makes the `--enter` subscriptions in order, reporting each reply and each replay's outcome
    /// on standard error (unless `quiet`). Returns the error of the first one the server refused
    /// (the client is shut down then); nil when every subscription was made and the client
    /// stopped.
    static func enter(
        _ calls: [(method: String, payload: [UInt8])], client: LongLinkClient, quiet: Bool
    ) async -> (any Error)? {
        let err = Terminal.standardError
        func report(_ text: String) {
            if !quiet { err.line("longlink subscribe: " + Terminal.escaped(text)) }
        }
        return await withTaskGroup(of: Void.self, returning: (any Error)?.self) { group in
            for call in calls {
                let subscription: LongLinkSubscription<[UInt8]>
                do {
                    subscription = try await client.subscribe(method: call.method, payload: call.payload)
                } catch let error as LongLinkError where error.code == .shutdown {
                    return nil  // stopped meanwhile (a signal): run() says why
                } catch {
                    client.shutdown()
                    return error
                }
                report("entered \(call.method): \(String(decoding: subscription.reply, as: UTF8.self))")
                group.addTask {
                    // Ends when the client stops.
                    for await replay in subscription.replays {
                        switch replay {
                        case .success(let reply):
                            report("entered again \(call.method): \(String(decoding: reply, as: UTF8.self))")
                        case .failure(let error):
                            report("entering again \(call.method) failed: \(ClientSupport.describe(error))")
                        }
                    }
                }
            }
            return nil
        }
    }
}

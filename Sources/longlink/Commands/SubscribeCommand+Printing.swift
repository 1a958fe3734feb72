import LongLink
import LongLinkCLISupport

extension SubscribeCommand {
    /// The pushes `subscribe` prints: acknowledged at hand-over, or with `--ack-after-print` once
    /// the line is written, so that a push whose line never reached standard output (the reader
    /// went away, the process died) comes again next time.
    static func deliveries(of client: LongLinkClient, topic: String?, ackAfterPrint: Bool)
        -> AsyncStream<PushDelivery<Push>>
    {
        client.pushes(topic: topic, acknowledgement: ackAfterPrint ? .afterProcessing : .atHandOver)
    }

    /// How many lines were written, and of how many reliable pushes.
    struct Printed: Equatable {
        var lines = 0
        var reliable = 0
    }

    /// Writes one line per push with `write` until `count` lines or a write fails (false),
    /// acknowledging each push once its line is written (a no-op when acknowledged at hand-over).
    static func print(_ deliveries: AsyncStream<PushDelivery<Push>>, count: Int?, write: (String) -> Bool) async
        -> Printed
    {
        var printed = Printed()
        // The sequence ends when the client stops: shutdown (a signal) or a terminal error.
        for await delivery in deliveries {
            guard write(ClientSupport.line(for: delivery.push)) else { break }
            delivery.ack()
            printed.lines += 1
            if delivery.push.isReliable { printed.reliable += 1 }
            if let count, printed.lines >= count { break }
        }
        return printed
    }
}

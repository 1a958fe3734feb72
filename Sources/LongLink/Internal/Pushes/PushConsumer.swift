/// What the machine offers pushes to (``PushSubscriber``; a plain buffer in the tests and the
/// fuzzer): it takes a push into its buffer or refuses it, and says when its waiting tasks must be
/// woken once the read is handled.
protocol PushConsumer: AnyObject {
    /// Offers a push of a read (see ``PushSubscriber/offer(_:wakeLater:)``): how it went, and
    /// whether the consumer joins the ones to wake once the read is handled.
    func offer(_ push: Push, wakeLater: Bool) -> (offered: PushSubscriber.Offered, wake: Bool)
    /// The consumer ended: a refusal of it does not defer reliable pushes.
    var isFinished: Bool { get }
    /// Its buffer is below half full (when every consumer's is, deferring reliable pushes ends).
    var isBelowHalf: Bool { get }
}

extension PushSubscriber: PushConsumer {}

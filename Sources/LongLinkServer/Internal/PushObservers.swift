internal import LongLinkCore
internal import LongLinkTransport

/// The observers of a push store in this process (``InMemoryPushStore``): told
/// on the caller's thread as things happen, so no notice is ever lost and nothing needs refreshing.
final class PushObservers: Sendable {
    private let observers = Locked<[PushStoreObserver]>([])

    func add(_ observer: PushStoreObserver) {
        observers.withLock { $0.append(observer) }
    }

    /// Stops reporting (the server that observed shuts down; the pushes stay for the next one).
    func removeAll() {
        observers.withLock { $0.removeAll() }
    }

    func pushStored(principal: String) {
        for observer in observers.withLock({ $0 }) where observer.isWatching(principal) {
            observer.pushStored(principal)
        }
    }

    /// Every observer hears of an exclusive login, the announcing server's too, as from a shared store.
    func sessionStarted(principal: String, clientID: String) {
        for observer in observers.withLock({ $0 }) { observer.sessionStarted(principal, clientID) }
    }
}

internal import LongLinkTransport
internal import LongLinkWire

/// The connect race ("Happy Eyeballs"): tries the ranked endpoints, starting the next one when the
/// stagger passes with no winner or when an attempt fails; the first attempt to succeed wins and
/// the others are cancelled (their connections closed by `discard` when they succeed late).
enum ConnectRace {
    struct Outcome<Value: Sendable>: Sendable {
        /// The winner, if any attempt succeeded.
        var winner: (endpoint: Endpoint, value: Value)?
        /// The attempts that failed, in the order they failed (cancelled losers are not failures).
        var failures: [(endpoint: Endpoint, error: LongLinkError)]
    }

    private enum Event<Value: Sendable>: Sendable {
        case stagger(UInt64)
        case finished(Endpoint, Result<Value, LongLinkError>)
    }

    static func run<Value: Sendable>(
        _ candidates: [Endpoint], stagger: Duration, clock: LoopClock, loop: EventLoop,
        attempt: @escaping @Sendable (Endpoint) async throws(LongLinkError) -> Value,
        discard: @escaping @Sendable (Value) -> Void
    ) async -> Outcome<Value> {
        var outcome = Outcome<Value>(winner: nil, failures: [])
        guard !candidates.isEmpty else { return outcome }
        await withTaskGroup(of: Event<Value>.self) { group in
            var next = 0
            var running = 0
            var timerID: UInt64 = 0
            func startNext() {
                let endpoint = candidates[next]
                next += 1
                running += 1
                group.addTask {
                    do throws(LongLinkError) {
                        return .finished(endpoint, .success(try await attempt(endpoint)))
                    } catch {
                        return .finished(endpoint, .failure(error))
                    }
                }
                guard next < candidates.count else { return }
                timerID += 1
                let id = timerID
                let deadline = clock.now.advanced(by: stagger)
                group.addTask {
                    // Cancelled when the race is decided; the event is then ignored.
                    try? await clock.sleep(until: deadline, on: loop)
                    return .stagger(id)
                }
            }
            startNext()
            while let event = await group.next() {
                switch event {
                case .stagger(let id):
                    if outcome.winner == nil, id == timerID, next < candidates.count { startNext() }
                case .finished(let endpoint, .success(let value)):
                    running -= 1
                    if outcome.winner == nil {
                        outcome.winner = (endpoint, value)
                        group.cancelAll()
                    } else {
                        discard(value)
                    }
                case .finished(let endpoint, .failure(let error)):
                    running -= 1
                    guard outcome.winner == nil else { continue }
                    if error.code != .cancelled { outcome.failures.append((endpoint, error)) }
                    if next < candidates.count {
                        startNext()
                    } else if running == 0 {
                        group.cancelAll()
                    }
                }
            }
        }
        return outcome
    }
}

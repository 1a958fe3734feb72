/// A timed script of faults, run against a ``FaultProxy`` (or one ``ProxiedConnection``).
///
/// ```swift
/// let schedule: FaultSchedule = [
///     .at(.seconds(2), .cut),
///     .at(.seconds(5), .blackHole(.both, for: .seconds(3))),
///     .at(.seconds(9), .latency(.milliseconds(200), for: .seconds(2))),
/// ]
/// let log = await schedule.run(on: proxy)
/// ```
///
/// Offsets count from the start of ``run(on:sleep:onApplied:)``. A fault with a `for:` duration is expanded
/// into the fault at its offset and its ``NetworkFault/reversal`` at offset plus duration, both driven by the
/// schedule's sleep, so an injected sleep controls the whole timeline. Steps at the same offset run in the order
/// listed, after any reversal due then. The run ends by itself after the last step.
public struct FaultSchedule: Sendable, Hashable, ExpressibleByArrayLiteral {
    /// One fault at an offset from the start of the run.
    public struct Step: Sendable, Hashable, CustomStringConvertible {
        /// When, from the start of the run (negative offsets count as zero).
        public var offset: Duration
        /// What.
        public var fault: NetworkFault

        /// A step applying `fault` at `offset`.
        public init(offset: Duration, fault: NetworkFault) {
            self.offset = max(.zero, offset)
            self.fault = fault
        }

        /// A step applying `fault` at `offset`.
        public static func at(_ offset: Duration, _ fault: NetworkFault) -> Step {
            Step(offset: offset, fault: fault)
        }

        /// `at <offset>: <fault>`.
        public var description: String {
            "at \(offset): \(fault)"
        }
    }

    /// One fault the run applied.
    public struct Record: Sendable, Hashable, CustomStringConvertible {
        /// The offset it was scheduled for.
        public var offset: Duration
        /// The fault applied (a reversal is applied as its own fault, without a duration).
        public var fault: NetworkFault
        /// True when this is the automatic reversal of a timed fault.
        public var isReversal: Bool
        /// The time measured from the start of the run until the fault was in effect.
        public var elapsed: Duration

        /// `<offset>: <fault>`, marked when a reversal.
        public var description: String {
            "\(offset): \(fault)\(isReversal ? " (reversal)" : "")"
        }
    }

    /// The steps as given.
    public var steps: [Step]

    /// A schedule of `steps`.
    public init(_ steps: [Step]) {
        self.steps = steps
    }

    /// A schedule of the listed steps.
    public init(arrayLiteral steps: Step...) {
        self.init(steps)
    }

    /// Every fault the run applies, in order, with timed faults expanded into the fault and its reversal.
    public var timeline: [Record] {
        var entries: [(record: Record, rank: Int, index: Int)] = []
        for (index, step) in steps.enumerated() {
            let record = Record(
                offset: step.offset, fault: step.fault.withoutDuration, isReversal: false, elapsed: .zero)
            entries.append((record, 1, index))
            if let duration = step.fault.duration, let reversal = step.fault.reversal {
                let end = Record(offset: step.offset + duration, fault: reversal, isReversal: true, elapsed: .zero)
                entries.append((end, 0, index))
            }
        }
        // By offset; at one offset, reversals first (so a fault renewed at the moment it ends stays on), then
        // the listed order.
        entries.sort { ($0.record.offset, $0.rank, $0.index) < ($1.record.offset, $1.rank, $1.index) }
        return entries.map(\.record)
    }

    /// Runs the schedule against `target` and returns what was applied, in order.
    ///
    /// - Parameters:
    ///   - target: the proxy, or one pair.
    ///   - sleep: waits for the given duration (the gap to the next step); `Task.sleep` by default. When it throws
    ///     (cancellation), the run stops and returns what was applied so far.
    ///   - onApplied: called after each fault is in effect.
    @discardableResult
    public func run(
        on target: some FaultTarget,
        sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        onApplied: (@Sendable (Record) -> Void)? = nil
    ) async -> [Record] {
        let clock = ContinuousClock()
        let start = clock.now
        var position = Duration.zero
        var applied: [Record] = []
        for var record in timeline {
            if record.offset > position {
                do {
                    try await sleep(record.offset - position)
                } catch {
                    break
                }
                position = record.offset
            }
            if Task.isCancelled {
                break
            }
            await target.apply(record.fault)
            record.elapsed = clock.now - start
            applied.append(record)
            onApplied?(record)
        }
        return applied
    }
}

internal import LongLinkCore
public import LongLinkTransport
import Synchronization

/// A rate limit per principal: a token bucket for each, refilled at ``rate`` requests a second up
/// to ``burst``. A request that finds its bucket empty is answered `RESOURCE_EXHAUSTED` without
/// running its handler.
///
/// The bucket is the principal's (``RequestContext/principal``) once the connection logged in,
/// the connection's before: a principal's flood spends its own bucket, never another's, and a
/// client cannot get fresh buckets by making up client ids. At most ``maxBuckets`` are kept;
/// buckets that are full again (they hold nothing a new one would not) are dropped first (at most
/// once a second), and when none is, a request that needs a new bucket is refused.
///
/// ```swift
/// router.interceptors.append(try RateLimitInterceptor(rate: 50, burst: 100))
/// ```
public final class RateLimitInterceptor: ServerInterceptor {
    /// Requests a second each bucket gains.
    public let rate: Int
    /// The most requests a bucket holds: the burst a quiet principal may send at once.
    public let burst: Int
    /// The most buckets kept.
    public let maxBuckets: Int
    /// The methods it limits; `nil` limits every method.
    public let methods: Set<String>?

    private let clock: any LongLinkClock
    private let state: Locked<State>

    /// A limiter of `rate` requests a second per principal with bursts of `burst`.
    /// - Parameters:
    ///   - methods: the methods it limits (`nil`, the default: all of them).
    ///   - clock: the time source (a manual clock in tests).
    /// - Throws: `invalidConfiguration` unless `rate`, `burst` and `maxBuckets` are at least 1.
    public init(
        rate: Int, burst: Int, maxBuckets: Int = 100_000, methods: Set<String>? = nil,
        clock: any LongLinkClock = SystemClock()
    ) throws(LongLinkError) {
        guard rate >= 1, burst >= 1, maxBuckets >= 1 else {
            throw LongLinkError(
                code: .invalidConfiguration, message: "a rate limit needs rate, burst and maxBuckets of at least 1")
        }
        self.rate = rate
        self.burst = burst
        self.maxBuckets = maxBuckets
        self.methods = methods
        self.clock = clock
        self.state = Locked(State())
    }

    /// Requests refused so far.
    public var refusals: Int { state.withLock { $0.refusals } }

    /// Buckets kept now.
    public var bucketCount: Int { state.withLock { $0.buckets.count } }

    public func intercept(
        _ payload: [UInt8], context: RequestContext,
        next: @Sendable ([UInt8], RequestContext) async throws -> [UInt8]
    ) async throws -> [UInt8] {
        if methods?.contains(context.method) ?? true {
            let key = context.principal.map(Key.principal) ?? .connection(context.connectionID)
            guard take(key) else {
                throw LongLinkError(
                    code: .resourceExhausted, message: "rate limit: \(rate) requests a second, bursts of \(burst)")
            }
        }
        return try await next(payload, context)
    }

    private enum Key: Hashable {
        case principal(String)
        case connection(UInt64)
    }

    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [Key: Bucket] = [:]
        var refusals = 0
        /// When full buckets were last dropped: at most once a second, so that a flood of new
        /// keys at the bound does not sweep the table on every request.
        var swept: ContinuousClock.Instant?
    }

    /// Takes a token from `key`'s bucket; false when it is empty (or no bucket can be kept).
    private func take(_ key: Key) -> Bool {
        let now = clock.now
        let rate = Double(self.rate)
        let burst = Double(self.burst)
        return state.withLock { state in
            var bucket: Bucket
            if let existing = state.buckets[key] {
                bucket = existing
                let gained = Double((now - bucket.refilled) / .seconds(1)) * rate
                bucket.tokens = min(burst, bucket.tokens + max(0, gained))
                bucket.refilled = now
            } else {
                if state.buckets.count >= maxBuckets, state.swept.map({ now - $0 >= .seconds(1) }) ?? true {
                    state.swept = now
                    state.buckets = state.buckets.filter { _, bucket in
                        bucket.tokens + Double((now - bucket.refilled) / .seconds(1)) * rate < burst
                    }
                }
                guard state.buckets.count < maxBuckets else {
                    state.refusals += 1
                    return false
                }
                bucket = Bucket(tokens: burst, refilled: now)
            }
            guard bucket.tokens >= 1 else {
                state.buckets[key] = bucket
                state.refusals += 1
                return false
            }
            bucket.tokens -= 1
            state.buckets[key] = bucket
            return true
        }
    }
}

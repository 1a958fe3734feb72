import FuzzKit

@testable import LongLinkRedis

/// The RESP3 parser of the Redis client fed arbitrary bytes, whole, in chunks split where the
/// input says, and byte by byte.
///
/// Input: a header (default or tiny limits, split sizes), then the stream. The three decodings
/// must agree on every value and on the error (its reason and its offset in the stream), whatever
/// the split, and the parser never holds more than one value's bound of bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func respParserFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    var limits = RESPParser.Limits()
    if input.bool() {
        limits = RESPParser.Limits(maxBulkLength: 16, maxAggregateCount: 4, maxDepth: 3, maxLineLength: 32, maxValueBytes: 128)
    }
    var splits: [Int] = []
    for _ in 0..<input.int(below: 16) { splits.append(Int(input.varint() % 4_096)) }
    let stream = input.chunk()

    let whole = parse(stream, [stream.count], limits)
    let chunked = parse(stream, splits, limits)
    let bytewise = parse(stream, [Int](repeating: 1, count: stream.count), limits)
    check(whole == chunked, "whole and chunked parsing differ: \(whole) vs \(chunked)")
    check(whole == bytewise, "whole and byte-at-a-time parsing differ")
    return 0
}

/// What a parse produced: its values (described, since NaN is not equal to itself) and its error.
struct Outcome: Equatable {
    var values: [String] = []
    var error: RESPParseError?
}

private func parse(_ stream: UnsafeRawBufferPointer, _ splits: [Int], _ limits: RESPParser.Limits) -> Outcome {
    var parser = RESPParser(limits: limits)
    var outcome = Outcome()
    var index = 0
    var splits = splits[...]
    while index < stream.count {
        let size = max(1, min(splits.popFirst() ?? stream.count, stream.count - index))
        parser.append(UnsafeRawBufferPointer(rebasing: stream[index..<index + size]))
        index += size
        do {
            while let value = try parser.next() { outcome.values.append(String(describing: value)) }
        } catch {
            outcome.error = error
            return outcome
        }
        check(parser.bufferedByteCount <= limits.maxValueBytes + limits.maxLineLength + 2, "more than one value's bound held")
    }
    // A stream that ends mid-value is no error: the rest may still come.
    return outcome
}

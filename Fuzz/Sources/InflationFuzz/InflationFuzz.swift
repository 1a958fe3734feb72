import FuzzKit

@testable import LongLinkWire

/// Inflation of compressed payloads fed arbitrary bytes, under the bounds a receiver sets: a
/// frame limit, a ratio and (the server's) a budget.
///
/// Input: a header (frame limit, ratio, budget, whether to deflate the payload first), then the
/// payload. Inflating never traps; what it returns fits the limit; a payload refused past one
/// limit is not accepted within it under a larger one; and a deflated payload inflates back to
/// itself when it fits.
@_cdecl("LLVMFuzzerTestOneInput")
public func inflationFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let maxFrameBytes = 64 + Int(input.varint() % (1 << 20))
    let ratio = 1 + input.int(below: 128)
    let budget = input.bool() ? Int.max : Int(input.varint() % (1 << 20))
    let deflateFirst = input.bool()
    let raw = Array(input.chunk())
    let payload = deflateFirst ? PayloadCompressor.deflate(raw, level: 1 + input.int(below: 9)) ?? raw : raw

    let limit = InflationLimit(
        compressedBytes: payload.count, maxFrameBytes: maxFrameBytes, ratio: ratio, budget: budget)
    check(limit.bytes <= maxFrameBytes && limit.bytes <= max(0, budget), "a limit above its bounds: \(limit)")
    let bounded = inflate(payload, limit)
    let larger = inflate(payload, InflationLimit(bytes: limit.bytes * 2 + 1, bound: .frame))
    switch bounded {
    case .success(let output):
        check(output.count <= limit.bytes, "\(output.count) bytes inflated past the limit \(limit.bytes)")
        check(larger == bounded, "a larger limit inflates differently")
    case .exceeded:
        if case .success(let output) = larger {
            check(output.count > limit.bytes, "refused past the limit, yet \(output.count) bytes fit it")
        }
    case .invalid:
        check(larger == bounded, "invalid under one limit, not under a larger one")
    }
    if deflateFirst, payload != raw, raw.count <= limit.bytes {
        check(bounded == .success(raw), "a deflated payload did not inflate back to itself")
    }
    return 0
}

enum Outcome: Equatable {
    case success([UInt8])
    case exceeded
    case invalid(String)
}

private func inflate(_ payload: [UInt8], _ limit: InflationLimit) -> Outcome {
    do throws(InflationError) {
        return .success(try PayloadCompression.incoming(payload, compression: 1, negotiated: true, within: limit))
    } catch {
        switch error {
        case .exceeded(let refused):
            check(refused == limit, "refused under another limit")
            return .exceeded
        case .invalid(let error):
            check(error.code == .compressionFailed, "an invalid payload is not compressionFailed: \(error)")
            return .invalid(error.message)
        }
    }
}

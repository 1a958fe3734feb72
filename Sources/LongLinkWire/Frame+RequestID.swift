extension Frame {
    /// The number a request id written as `String(number)` (as the client writes its ids) stands
    /// for: nil unless `requestID` is exactly such an id (decimal digits, no sign, no leading
    /// zero, at most `UInt64.max`), because ids match as strings and "07" is not "7".
    ///
    /// The client maps every reply's id back to its call with this; `UInt64(_:)` also takes "+7"
    /// and "007", and costs more on the client's loop.
    package static func requestNumber(fromID requestID: String) -> UInt64? {
        var value: UInt64 = 0
        var digits = 0
        for byte in requestID.utf8 {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10, !(digits == 1 && value == 0) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            digits += 1
        }
        return digits == 0 ? nil : value
    }
}

/// Stops the run when an invariant fails, so that libFuzzer saves the input. A trap rather than an
/// assertion: fuzz builds are optimized, and `assert` is compiled out there.
public func check(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #file,
    line: UInt = #line
) {
    if !condition() {
        fatalError("invariant failed: \(message())", file: file, line: line)
    }
}

enum RecoveryBenchmark { static func run(_ s: BenchSettings, into r: inout BenchReport) async throws {} }
enum ServerBenchmark { static func run(_ s: BenchSettings, into r: inout BenchReport) async throws {} }

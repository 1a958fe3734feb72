enum MemoryBenchmark { static func run(_ s: BenchSettings, into r: inout BenchReport) async throws {} }
enum TimeoutBenchmark { static func run(_ s: BenchSettings, into r: inout BenchReport) async throws {} }
enum RecoveryBenchmark { static func run(_ s: BenchSettings, into r: inout BenchReport) async throws {} }
enum ServerBenchmark { static func run(_ s: BenchSettings, into r: inout BenchReport) async throws {} }
enum BenchProbe { static let scenarioName = "_probe"; static func main() async -> Int32 { 0 } }

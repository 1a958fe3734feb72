#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

private final class ThreadStart {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    func run() {
        #if os(Linux)
            LinuxSystem.setCurrentThreadName(name)
        #else
            _ = pthread_setname_np(name)
        #endif
        body()
    }
}

/// Starts a detached operating-system thread named `name` that runs `body`. Used for event loops and the
/// resolver (and the server's durable store, whose SQLite calls block), which must never occupy the
/// cooperative pool or Dispatch's global queues.
package func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) {
    let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    #if os(Linux)
        var thread = pthread_t()
        let result = pthread_create(
            &thread, &attributes,
            { argument in
                Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            }, start)
    #else
        var thread: pthread_t?
        let result = pthread_create(
            &thread, &attributes,
            { argument in
                Unmanaged<ThreadStart>.fromOpaque(argument).takeRetainedValue().run()
                return nil
            }, start)
    #endif
    precondition(result == 0, "pthread_create failed: \(result)")
}

/// The service set of ``LongLinkServices`` and where its `run()` stands: a plain value, changed
/// under the services' lock, whose methods say what the caller does next (outside the lock).
///
/// A service is *launched* when `run()` has taken it to run its client; it is *finished* when that
/// client's `run()` has returned. A removed service whose client is still running stays in
/// `leaving`, by id, until it finishes, so that its name is free at once and the remover can wait.
struct ServiceTable: Sendable {
    enum Run: Equatable {
        /// `run()` was not called yet.
        case notStarted
        /// `run()` launches services as they are added.
        case running
        /// Shutdown or cancellation: `run()` waits for what it launched; nothing new is added.
        case draining
        /// `run()` returned.
        case ended
    }

    struct Entry: Sendable {
        let id: UInt64
        let name: ServiceName
        let client: LongLinkClient
        var launched = false
        var finished = false
        /// Why the client's `run()` ended, when it threw.
        var failure: (any Error)?
        /// Removers waiting for the client to stop, by waiter id.
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Removers cancelled before they began to wait: they must not wait when they begin.
        var cancelledWaiters: Set<UInt64> = []
    }

    /// A client for `run()` to run.
    struct Launch: Sendable {
        let id: UInt64
        let name: ServiceName
        let client: LongLinkClient
    }

    /// What a removal leaves to the remover.
    enum RemoveAction {
        /// Shut the client down; nothing runs it, so there is nothing to wait for.
        case shutDown(LongLinkClient)
        /// Shut the client down and wait until `finished(id:error:)` for `id`.
        case shutDownAndWait(LongLinkClient, id: UInt64)
    }

    private(set) var run = Run.notStarted
    private(set) var shutdownRequested = false
    private(set) var services: [ServiceName: Entry] = [:]
    private var leaving: [UInt64: Entry] = [:]
    private var nextID: UInt64 = 0
    private var nextWaiterID: UInt64 = 0

    init(_ clients: [ServiceName: LongLinkClient]) {
        for (name, client) in clients { insert(name, client) }
    }

    private mutating func insert(_ name: ServiceName, _ client: LongLinkClient) {
        nextID += 1
        services[name] = Entry(id: nextID, name: name, client: client)
    }

    var clients: [ServiceName: LongLinkClient] { services.mapValues(\.client) }

    /// Removed services whose clients are still running.
    var leavingCount: Int { leaving.count }

    /// Adds a service; true when `run()` is running and must be told to launch it.
    mutating func add(_ name: ServiceName, _ client: LongLinkClient) throws(LongLinkError) -> Bool {
        guard !shutdownRequested, run == .notStarted || run == .running else {
            throw LongLinkError(code: .shutdown, message: "the services are shut down; '\(name)' was not added")
        }
        guard services[name] == nil else {
            throw LongLinkError(code: .alreadyExists, message: "a service named '\(name)' exists already")
        }
        insert(name, client)
        return run == .running
    }

    /// Takes a service out of the set; its name is free from now on.
    mutating func remove(_ name: ServiceName) throws(LongLinkError) -> RemoveAction {
        guard let entry = services.removeValue(forKey: name) else {
            throw LongLinkError(code: .notFound, message: "no service named '\(name)'")
        }
        // Until `run()` ends, a service not launched yet will be: its client's `run()` ends its
        // state stream, so the remover waits for it as for one that runs.
        guard run == .running || run == .draining, !entry.finished else { return .shutDown(entry.client) }
        leaving[entry.id] = entry
        return .shutDownAndWait(entry.client, id: entry.id)
    }

    /// `run()` starts; false when it was called before.
    mutating func start() -> Bool {
        guard run == .notStarted else { return false }
        run = .running
        return true
    }

    /// The services `run()` has not launched yet, now marked launched.
    mutating func takeUnlaunched() -> [Launch] {
        var launches: [Launch] = []
        for (name, entry) in services where !entry.launched {
            services[name]?.launched = true
            launches.append(Launch(id: entry.id, name: name, client: entry.client))
        }
        for (id, entry) in leaving where !entry.launched {
            leaving[id]?.launched = true
            launches.append(Launch(id: id, name: entry.name, client: entry.client))
        }
        return launches
    }

    /// Shutdown was asked for: the clients to shut down (the leaving ones too, so that a shorter
    /// grace period applies to them as well).
    mutating func requestShutdown() -> [LongLinkClient] {
        shutdownRequested = true
        return services.values.map(\.client) + leaving.values.map(\.client)
    }

    /// `run()` stops launching (after shutdown or cancellation): the services it has yet to launch.
    mutating func beginDraining() -> [Launch] {
        run = .draining
        return takeUnlaunched()
    }

    /// A launched client's `run()` returned: the removers to resume.
    mutating func finished(id: UInt64, error: (any Error)?) -> [CheckedContinuation<Void, Never>] {
        if let entry = leaving.removeValue(forKey: id) { return Array(entry.waiters.values) }
        guard let name = services.first(where: { $0.value.id == id })?.key else { return [] }
        services[name]?.finished = true
        services[name]?.failure = error
        return []
    }

    /// An id for a remover about to wait.
    mutating func makeWaiterID() -> UInt64 {
        nextWaiterID += 1
        return nextWaiterID
    }

    /// Waits for a removed service's client to stop; false when it stopped already or the waiter
    /// was cancelled (resume now).
    mutating func wait(for id: UInt64, waiter waiterID: UInt64, _ waiter: CheckedContinuation<Void, Never>) -> Bool {
        guard leaving[id] != nil, leaving[id]?.cancelledWaiters.remove(waiterID) == nil else { return false }
        leaving[id]?.waiters[waiterID] = waiter
        return true
    }

    /// A remover's task was cancelled: its continuation to resume now, or nil when it has not
    /// begun to wait (it will not) or was resumed already.
    mutating func cancelWait(for id: UInt64, waiter waiterID: UInt64) -> CheckedContinuation<Void, Never>? {
        guard leaving[id] != nil else { return nil }
        if let waiter = leaving[id]?.waiters.removeValue(forKey: waiterID) { return waiter }
        leaving[id]?.cancelledWaiters.insert(waiterID)
        return nil
    }

    /// `run()` returned: the failures of the services still in the set, by name.
    mutating func end() -> [(ServiceName, any Error)] {
        run = .ended
        return services.values.compactMap { entry in entry.failure.map { (entry.name, $0) } }.sorted { $0.0 < $1.0 }
    }
}

internal import LongLinkTransport
internal import LongLinkWire

/// Sharded pub/sub over a Redis Cluster: each channel is subscribed (`SSUBSCRIBE`) on the primary
/// serving its slot, through one ``RedisSubscriber`` per primary.
///
/// A channel is placed by the cluster client's slot map. It is placed again, on a fresh map,
/// when its node unsubscribes it without being asked (its slot moved away) or when a node's
/// connection is lost (the node may have failed over): the placement is retried while a node
/// holding channels stays unreachable. Every placement change, like every node's reconnection,
/// is reported as ``RedisSubscriber/Event/subscribed`` once the moved channels are confirmed:
/// notices published meanwhile may have been missed, and the owner reads again.
actor RedisClusterSubscriber: RedisNoticeSubscriber {
    private let cluster: RedisClusterClient
    private let loop: EventLoop
    private let onEvent: @Sendable (RedisSubscriber.Event) -> Void
    /// Where each wanted channel is subscribed; by the channel's bytes.
    private var placed: [PrincipalKey: ClusterTopology.Address] = [:]
    /// Wanted channels whose slot no primary served when they were last placed.
    private var unplaced: Set<PrincipalKey> = []
    private var nodes: [ClusterTopology.Address: RedisSubscriber] = [:]
    private var placing: Task<Void, Never>?
    /// A placement was asked for since the current round began.
    private var placementAsked = false
    private var isShutDown = false
    /// How long a placement waits before looking again while a node stays unreachable.
    static let placementRetry = Duration.milliseconds(250)

    init(
        cluster: RedisClusterClient, loop: EventLoop, onEvent: @escaping @Sendable (RedisSubscriber.Event) -> Void
    ) {
        self.cluster = cluster
        self.loop = loop
        self.onEvent = onEvent
    }

    /// Nothing to start: a node's subscriber starts with its first channel.
    func start() async {}

    /// Places `channel` on its slot's primary and lets that node's subscriber read `wanted`
    /// (which says the truth whenever it is read: the owner calls again after each change).
    func update(_ channel: String, wanted: @escaping @Sendable () -> Bool) async {
        guard !isShutDown else { return }
        let key = PrincipalKey(channel)
        let target = try? await cluster.primary(for: Array(channel.utf8))
        guard !isShutDown else { return }
        let previous = placed[key]
        guard let target else {
            if let previous { await move(channel, from: previous, to: nil) }
            if wanted() { unplaced.insert(key) } else { unplaced.remove(key) }
            if !unplaced.isEmpty { schedulePlacement() }
            return
        }
        unplaced.remove(key)
        placed[key] = target
        if let previous, previous != target, let node = nodes[previous] { await node.unsubscribe(channel) }
        await subscriber(for: target).update(channel, wanted: wanted)
        // Not wanted (any more): forgotten here too, unless a later call placed it elsewhere.
        if !wanted(), placed[key] == target {
            placed[key] = nil
            retireIdleNodes()
        }
    }

    func shutdown() async {
        isShutDown = true
        placing?.cancel()
        placing = nil
        let all = Array(nodes.values)
        nodes = [:]
        placed = [:]
        unplaced = []
        for node in all { await node.shutdown() }
    }

    /// A node subscriber's event: messages go straight on; a reconnection, a lost connection or
    /// an unsubscribing Redis did on its own lead to a new placement.
    private func nodeEvent(_ event: RedisSubscriber.Event, from address: ClusterTopology.Address) {
        guard !isShutDown else { return }
        switch event {
        case .message: onEvent(event)
        case .subscribed: onEvent(.subscribed)
        case .disconnected: schedulePlacement()
        case .unsubscribed(let channel):
            // Confirming an unsubscribe asked for: the channel is placed elsewhere, or not wanted.
            guard placed[PrincipalKey(channel)] == address else { return }
            schedulePlacement()
        }
    }

    /// Places every wanted channel again on a fresh map (one task at a time, which runs another
    /// round when asked meanwhile), retrying while a node holding channels cannot be reached;
    /// reports the placement once it is confirmed.
    private func schedulePlacement() {
        placementAsked = true
        guard placing == nil, !isShutDown else { return }
        placing = Task {
            var moved = false
            while !Task.isCancelled, !isShutDown, placementAsked {
                placementAsked = false
                let (settled, movedNow) = await placeAll()
                moved = moved || movedNow
                if !settled {
                    placementAsked = true
                    try? await Task.sleep(for: Self.placementRetry)
                }
            }
            placing = nil
            if moved, !isShutDown { onEvent(.subscribed) }
        }
    }

    /// One placement round: whether every wanted channel is on a reachable primary, and whether
    /// any moved.
    private func placeAll() async -> (settled: Bool, moved: Bool) {
        guard let topology = try? await cluster.refreshTopology(), !isShutDown else { return (false, false) }
        var settled = true
        var moves: [(channel: String, from: ClusterTopology.Address?, to: ClusterTopology.Address?)] = []
        for key in Array(placed.keys) + Array(unplaced) {
            let target = topology.primary(forSlot: ClusterSlot.of(Array(key.name.utf8)))?.address
            if target == nil { settled = false }
            if placed[key] != target { moves.append((key.name, placed[key], target)) }
        }
        for move in moves { await self.move(move.channel, from: move.from, to: move.to) }
        // A channel that did not move but whose node is down: the node may be about to fail over.
        for (address, node) in nodes where placed.values.contains(address) {
            if await !node.isConnected { settled = false }
        }
        return (settled, !moves.isEmpty)
    }

    /// Moves a wanted channel between nodes (nil: no primary serves its slot now).
    private func move(_ channel: String, from old: ClusterTopology.Address?, to new: ClusterTopology.Address?) async {
        let key = PrincipalKey(channel)
        if let new {
            placed[key] = new
            unplaced.remove(key)
        } else {
            placed[key] = nil
            unplaced.insert(key)
        }
        if let old, let node = nodes[old] { await node.unsubscribe(channel) }
        if let new { await subscriber(for: new).subscribe(channel) }
        retireIdleNodes()
    }

    private func subscriber(for address: ClusterTopology.Address) -> RedisSubscriber {
        if let node = nodes[address] { return node }
        let onEvent = onEvent
        let node = RedisSubscriber(configuration: cluster.configuration(for: address), loop: loop, sharded: true) {
            [weak self] event in
            if case .message = event {
                // Messages are cheap to pass on and must keep their order: straight from the loop.
                onEvent(event)
            } else if let self {
                Task { await self.nodeEvent(event, from: address) }
            }
        }
        nodes[address] = node
        Task { await node.start() }
        return node
    }

    /// Closes the subscribers of nodes that hold no channel any more.
    private func retireIdleNodes() {
        let used = Set(placed.values)
        for (address, node) in nodes where !used.contains(address) {
            nodes[address] = nil
            Task { await node.shutdown() }
        }
    }
}

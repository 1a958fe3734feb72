public import LongLinkServer

extension ServerStores {
    /// A fleet's stores on the Redis of `configuration`: a ``RedisPushStore`` bounded per principal
    /// as given, and a ``RedisDedupeStore``. Each opens its connections on first use. Throws
    /// ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings.
    ///
    /// ```swift
    /// let server = LongLinkServer(configuration: configuration, router: router, stores: try .redis(redisConfiguration))
    /// ```
    public static func redis(
        _ configuration: RedisConfiguration, capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) -> ServerStores {
        try redis(
            configuration, lease: ClaimLease(), capacityPerPrincipal: capacityPerPrincipal,
            bytesPerPrincipal: bytesPerPrincipal)
    }

    /// ``redis(_:capacityPerPrincipal:bytesPerPrincipal:)`` with the de-dup claims following their
    /// owner's `lease` (see ``ClaimLease``; the defaults are used without it).
    public static func redis(
        _ configuration: RedisConfiguration, lease: ClaimLease, capacityPerPrincipal: Int = 10_000,
        bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) -> ServerStores {
        ServerStores(
            pushes: try RedisPushStore(
                configuration: configuration, capacityPerPrincipal: capacityPerPrincipal,
                bytesPerPrincipal: bytesPerPrincipal),
            dedupe: try RedisDedupeStore(configuration: configuration, lease: lease))
    }

    /// A fleet's stores on the Redis Cluster reached through `seeds` (any of its nodes, each
    /// reached with the first seed's settings): every principal's pushes, de-dup entries and
    /// notices on the primary serving its slot, notices by sharded pub/sub. The first seed's
    /// ``RedisConfiguration/durability`` says when a push or a stored reply counts as written.
    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings or no seed.
    ///
    /// ```swift
    /// let seeds = [RedisConfiguration(host: "10.0.0.1", port: 7000), RedisConfiguration(host: "10.0.0.2", port: 7000)]
    /// let server = LongLinkServer(configuration: configuration, router: router, stores: try .redisCluster(seeds))
    /// ```
    public static func redisCluster(
        _ seeds: [RedisConfiguration], lease: ClaimLease = ClaimLease(), capacityPerPrincipal: Int = 10_000,
        bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) -> ServerStores {
        ServerStores(
            pushes: try RedisPushStore(
                cluster: seeds, capacityPerPrincipal: capacityPerPrincipal, bytesPerPrincipal: bytesPerPrincipal),
            dedupe: try RedisDedupeStore(cluster: seeds, lease: lease))
    }
}

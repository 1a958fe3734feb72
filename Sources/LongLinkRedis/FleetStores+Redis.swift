public import LongLinkServer

extension FleetStores {
    /// A fleet's stores on the Redis of `configuration`: a ``RedisPushStore`` bounded per principal
    /// as given, and a ``RedisDedupeStore``. Each opens its connections on first use. Throws
    /// ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings.
    ///
    /// ```swift
    /// let server = LongLinkServer(configuration: configuration, router: router, fleet: try .redis(redisConfiguration))
    /// ```
    public static func redis(
        _ configuration: RedisConfiguration, capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) -> FleetStores {
        try redis(
            configuration, lease: ClaimLease(), capacityPerPrincipal: capacityPerPrincipal,
            bytesPerPrincipal: bytesPerPrincipal)
    }

    /// ``redis(_:capacityPerPrincipal:bytesPerPrincipal:)`` with the de-dup claims following their
    /// owner's `lease` (see ``ClaimLease``; the defaults are used without it).
    public static func redis(
        _ configuration: RedisConfiguration, lease: ClaimLease, capacityPerPrincipal: Int = 10_000,
        bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) -> FleetStores {
        FleetStores(
            pushes: try RedisPushStore(
                configuration: configuration, capacityPerPrincipal: capacityPerPrincipal,
                bytesPerPrincipal: bytesPerPrincipal),
            dedupe: try RedisDedupeStore(configuration: configuration, lease: lease))
    }
}

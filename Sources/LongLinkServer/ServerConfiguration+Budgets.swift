// The budgets' former places, one property each on the configuration; they moved into
// `ServerConfiguration.budgets` (a `StoreBudgets`, which the durable store shares). Kept, deprecated,
// so that code setting them still builds.
extension ServerConfiguration {
    /// The former place of ``StoreBudgets/pushCapacityPerPrincipal``.
    @available(*, deprecated, message: "use budgets.pushCapacityPerPrincipal")
    public var pushStoreCapacityPerPrincipal: Int {
        get { budgets.pushCapacityPerPrincipal }
        set { budgets.pushCapacityPerPrincipal = newValue }
    }
    /// The former place of ``StoreBudgets/pushBytesPerPrincipal``.
    @available(*, deprecated, message: "use budgets.pushBytesPerPrincipal")
    public var pushStoreBytesPerPrincipal: Int {
        get { budgets.pushBytesPerPrincipal }
        set { budgets.pushBytesPerPrincipal = newValue }
    }
    /// The former place of ``StoreBudgets/dedupeCapacity``.
    @available(*, deprecated, message: "use budgets.dedupeCapacity")
    public var dedupeCapacity: Int {
        get { budgets.dedupeCapacity }
        set { budgets.dedupeCapacity = newValue }
    }
    /// The former place of ``StoreBudgets/dedupeCapacityPerPrincipal``.
    @available(*, deprecated, message: "use budgets.dedupeCapacityPerPrincipal")
    public var dedupeCapacityPerPrincipal: Int {
        get { budgets.dedupeCapacityPerPrincipal }
        set { budgets.dedupeCapacityPerPrincipal = newValue }
    }
    /// The former place of ``StoreBudgets/dedupeCapacityPerClient``.
    @available(*, deprecated, message: "use budgets.dedupeCapacityPerClient")
    public var dedupeCapacityPerClient: Int {
        get { budgets.dedupeCapacityPerClient }
        set { budgets.dedupeCapacityPerClient = newValue }
    }
    /// The former place of ``StoreBudgets/dedupeBytes``.
    @available(*, deprecated, message: "use budgets.dedupeBytes")
    public var dedupeBytes: Int {
        get { budgets.dedupeBytes }
        set { budgets.dedupeBytes = newValue }
    }
    /// The former place of ``StoreBudgets/dedupeBytesPerPrincipal``.
    @available(*, deprecated, message: "use budgets.dedupeBytesPerPrincipal")
    public var dedupeBytesPerPrincipal: Int {
        get { budgets.dedupeBytesPerPrincipal }
        set { budgets.dedupeBytesPerPrincipal = newValue }
    }
    /// The former place of ``StoreBudgets/dedupeBytesPerClient``.
    @available(*, deprecated, message: "use budgets.dedupeBytesPerClient")
    public var dedupeBytesPerClient: Int {
        get { budgets.dedupeBytesPerClient }
        set { budgets.dedupeBytesPerClient = newValue }
    }
}

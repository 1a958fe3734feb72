extension ServerStores {
    /// A server's stores in one ``DurableStore`` on this machine's disk: reliable pushes and the
    /// de-duplication window survive a restart of the process (and, with the default
    /// ``DurableSyncPolicy/everyCommit``, of the machine). Throws the errors of
    /// ``DurableStore/init(directory:configuration:)``, each naming its path.
    ///
    /// ```swift
    /// let stores = try ServerStores.durable(
    ///     directory: "/var/lib/quotes/longlink", configuration: DurableStoreConfiguration(budgetsOf: configuration))
    /// let server = LongLinkServer(configuration: configuration, router: router, stores: stores)
    /// ```
    ///
    /// One server per directory: a second store on it is refused while the first is open.
    public static func durable(
        directory: String, configuration: DurableStoreConfiguration = .init()
    ) throws(LongLinkError) -> ServerStores {
        let store = try DurableStore(directory: directory, configuration: configuration)
        return ServerStores(pushes: store, dedupe: store)
    }
}

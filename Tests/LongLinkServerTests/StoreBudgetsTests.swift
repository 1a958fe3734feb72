import LongLinkServer
import Testing

/// The one budgets value the server's stores and the durable store share: the server's budgets
/// reach the durable store whole, and each configuration refuses an impossible budget by its name.
@Suite("Store budgets")
struct StoreBudgetsTests {
    @Test func theDurableStoreTakesEveryBudgetOfTheServer() {
        var server = ServerConfiguration()
        server.budgets.pushCapacityPerPrincipal = 1
        server.budgets.pushBytesPerPrincipal = 2
        server.budgets.dedupeCapacity = 3
        server.budgets.dedupeCapacityPerPrincipal = 4
        server.budgets.dedupeCapacityPerClient = 5
        server.budgets.dedupeBytes = 6
        server.budgets.dedupeBytesPerPrincipal = 7
        server.budgets.dedupeBytesPerClient = 8
        #expect(DurableStoreConfiguration(budgetsOf: server).budgets == server.budgets)
        #expect(DurableStoreConfiguration().budgets == ServerConfiguration().budgets)
    }

    @Test(arguments: ["pushCapacityPerPrincipal", "dedupeCapacityPerClient", "dedupeBytesPerClient"])
    func anImpossibleBudgetIsRefusedByName(_ name: String) {
        var budgets = StoreBudgets()
        switch name {
        case "pushCapacityPerPrincipal": budgets.pushCapacityPerPrincipal = 0
        case "dedupeCapacityPerClient": budgets.dedupeCapacityPerClient = 0
        default: budgets.dedupeBytesPerClient = -1
        }
        var server = ServerConfiguration()
        server.budgets = budgets
        var durable = DurableStoreConfiguration()
        durable.budgets = budgets
        for validate in [server.validate, durable.validate] {
            do throws(LongLinkError) {
                try validate()
                Issue.record("budgets.\(name) was accepted")
            } catch {
                #expect(error.code == .invalidConfiguration)
                #expect(error.message.contains("budgets.\(name)"), "\(error.message)")
            }
        }
    }

    /// A byte budget of 0 keeps no reply in the server's memory, but would refuse every request of
    /// the durable store, whose entries always have bytes.
    @Test func aZeroByteBudgetIsTheServersOnly() throws {
        var server = ServerConfiguration()
        server.budgets.dedupeBytes = 0
        try server.validate()
        #expect(throws: LongLinkError.self) { try DurableStoreConfiguration(budgetsOf: server).validate() }
    }
}

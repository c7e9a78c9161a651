#if PostgreSQL
import PeerlogRelayPostgres

/// Runs the stores' connection pools (each store is a `Service`) while `body` runs, in a task
/// group that ends them when `body` returns or throws.
func withRunning<T: Sendable>(_ stores: [PostgresRelayStore], _ body: () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self) { pools in
        for store in stores { pools.addTask { await store.run() } }
        defer { pools.cancelAll() }
        return try await body()
    }
}
/// Deadlines for the stores the tests use as their working database. A 2-core machine running
/// the other suites (daemons writing and fsyncing beside) once kept the server from creating the
/// tables within the default 5 s. `DeadlineTests` and `StartErrorsTests` check the defaults' and
/// short deadlines themselves.
extension RelayStoreLimits {
    static let patient = RelayStoreLimits(operation: .seconds(30), connect: .seconds(10))

    /// Limits with both deadlines set.
    init(operation: Duration, connect: Duration) {
        self.init()
        operationTimeout = operation
        connectTimeout = connect
    }
}
#endif

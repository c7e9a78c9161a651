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
#endif

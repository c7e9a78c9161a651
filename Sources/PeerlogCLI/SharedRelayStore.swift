import Logging
import PeerlogEngine
import PeerlogRelayPostgres
import ServiceLifecycle

/// The relay's PostgreSQL store of record, when this build has it (`--traits PostgreSQL`).
struct SharedRelayStore: Sendable {
    /// Admits each assignment before the local replica commits it.
    let gate: any SequenceGate
    /// The store's connection pool, a service that goes before the node in the relay's
    /// `ServiceGroup` (so it stops after the node and the follower).
    let pool: any Service
    /// Catches the local replica up with what the relay's other processes committed, and
    /// commits the replica's assignments through the gate.
    let follower: @Sendable (Replica) -> any Service

    static func open(url: String, logger: Logger) async throws -> SharedRelayStore {
        #if PostgreSQL
        let store = try PostgresRelayStore(url: url, logger: logger)
        do { try await store.start() } catch {
            throw CLIError("cannot use PostgreSQL at \(url): \(error)")
        }
        return SharedRelayStore(
            gate: store, pool: store,
            follower: { FollowerService(follower: PostgresRelayFollower(replica: $0, store: store, logger: logger)) })
        #else
        throw CLIError(
            "this peerlog was built without PostgreSQL support; build it with `swift build --traits PostgreSQL`")
        #endif
    }
}

#if PostgreSQL
/// Runs the follower until shutdown.
private struct FollowerService: Service {
    let follower: PostgresRelayFollower
    func run() async throws {
        await withGracefulShutdownHandler {
            await follower.run()
        } onGracefulShutdown: {
            follower.stop()
        }
    }
}
#endif

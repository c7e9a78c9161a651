import Logging
import PeerlogEngine
import PeerlogRelayPostgres
import ServiceLifecycle

/// The relay's PostgreSQL store of record, when this build has it (`--traits PostgreSQL`).
struct SharedRelayStore: Sendable {
    #if PostgreSQL
    let store: PostgresRelayStore

    static func open(url: String, logger: Logger) async throws -> SharedRelayStore {
        let store = try PostgresRelayStore(url: url, logger: logger)
        do { try await store.start() } catch {
            store.shutdown()
            throw CLIError("cannot use PostgreSQL at \(url): \(error)")
        }
        return SharedRelayStore(store: store)
    }

    var gate: any SequenceGate { store }

    /// Catches the local replica up with what the other relay processes committed.
    func follower(replica: Replica) -> any Service { FollowerService(follower: PostgresRelayFollower(replica: replica, store: store, logger: store.logger)) }

    func close() async { store.shutdown() }
    #else
    static func open(url: String, logger: Logger) async throws -> SharedRelayStore {
        throw CLIError("this peerlog was built without PostgreSQL support; build it with `swift build --traits PostgreSQL`")
    }

    var gate: any SequenceGate { fatalError("unreachable: no PostgreSQL store in this build") }
    func follower(replica: Replica) -> any Service { fatalError("unreachable: no PostgreSQL store in this build") }
    func close() async {}
    #endif
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

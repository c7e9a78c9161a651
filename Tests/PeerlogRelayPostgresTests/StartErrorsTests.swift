#if PostgreSQL
import Foundation
import Logging
import PeerlogRelayPostgres
import Testing

/// `start()` says at once why it cannot use a database, instead of the pool's tripped circuit
/// breaker a minute later.
struct StartErrorsTests {
    @Test func aServerOrDatabaseThatIsNotThereIsNamedAtOnce() async throws {
        guard let base = ProcessInfo.processInfo.environment["PEERLOG_POSTGRES_URL"] else {
            Issue.record(
                "PEERLOG_POSTGRES_URL is not set: start a server with `bash tools/postgres.sh start` and export its url"
            )
            return
        }
        let missingDatabase = String(base[..<base.lastIndex(of: "/")!]) + "/peerlog_no_such_database"
        for (url, cause) in [
            ("postgres://postgres@127.0.0.1:1/peerlog", "Connection refused"), (missingDatabase, "does not exist"),
        ] {
            let store = try PostgresRelayStore(url: url, logger: Logger(label: "test"))
            let began = ContinuousClock.now
            do {
                try await store.start()
                Issue.record("started on \(url)")
            } catch {
                #expect("\(error)".contains("cannot connect to PostgreSQL") && "\(error)".contains(cause), "\(error)")
                #expect(!"\(error)".contains("\n"), "not one line: \(error)")
            }
            #expect(ContinuousClock.now - began < .seconds(10))
        }
    }
}
#endif

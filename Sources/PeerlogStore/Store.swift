import Foundation
import GRDB

/// The replica's SQLite database (WAL mode) at a path. All access goes through `read` and
/// `write`, whose closures get a `StoreDB` with typed queries; nothing outside this module
/// writes SQL. Secrets never go into the database.
public final class Store: Sendable {
    /// The database file, or ":memory:".
    public let path: String
    let pool: any DatabaseWriter

    /// Opens (creating if needed) and migrates. `synchronous=NORMAL` in WAL mode: a committed
    /// transaction survives the process being killed (kill -9); power loss may lose the last
    /// transactions but never corrupts the file.
    public init(path: String) throws {
        self.path = path
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        pool = try DatabasePool(path: path, configuration: config)
        try Migrations.migrator.migrate(pool)
    }

    /// A private in-memory store (tests, property runs). Same schema, no file.
    public init(inMemory: Void = ()) throws {
        path = ":memory:"
        pool = try DatabaseQueue()
        try Migrations.migrator.migrate(pool)
    }

    /// Runs `body` in one write transaction; everything it does commits together or not at all.
    public func write<T>(_ body: (StoreDB) throws -> T) throws -> T {
        try pool.write { db in try body(StoreDB(db: db)) }
    }

    /// Runs `body` on a read-only snapshot.
    public func read<T>(_ body: (StoreDB) throws -> T) throws -> T {
        try pool.read { db in try body(StoreDB(db: db)) }
    }

    /// `PRAGMA integrity_check`: "ok" when the file is consistent.
    public func integrityCheck() throws -> String {
        try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    /// Names of the applied migrations, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try Migrations.migrator.appliedMigrations(db) }
    }
}

/// A database connection inside a `Store.read`/`Store.write` closure.
public struct StoreDB {
    let db: Database
}

import CSQLiteTuning
import Dispatch
import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel
import Synchronization

/// The replica's SQLite database (WAL mode) at a path. All access goes through `read` and
/// `write`, whose closures get a `StoreDB` with typed queries; nothing outside this module
/// writes SQL. Secrets never go into the database.
package final class Store: Sendable {
    /// The database file, or ":memory:".
    package let path: String
    package let access: Access
    let pool: any DatabaseWriter
    /// A second connection that copies the WAL into the database file (PASSIVE checkpoints)
    /// off the writer's path, so a local write never waits for a checkpoint.
    private let checkpointer: DatabaseQueue?
    private let checkpointQueue = DispatchQueue(label: "peerlog.store.checkpoint")
    private let writes = Atomic<Int>(0)
    private let committed = Atomic<Int>(0)
    /// Write transactions this instance committed (not other processes'): a reader that saw the
    /// store at one count has nothing new of this process to read while it holds.
    package var writeCount: Int { committed.load(ordering: .acquiring) }
    private let checkpointing = Atomic<Bool>(false)

    /// A background checkpoint is started every this many write transactions.
    package static let checkpointEveryWrites = 100
    /// WAL pages after which the writer checkpoints by itself (SQLite's default is 1,000):
    /// the bound on the WAL under sustained writes, about 16 MB with 4 KiB pages.
    package static let writerCheckpointPages = 4_000
    /// Size the WAL file is truncated to when it restarts.
    package static let walSizeLimitBytes = 4 << 20
    /// Bytes of one statement's journal SQLite keeps in memory (its default: 64 KiB). Storing a
    /// receipt fires triggers, so SQLite keeps the old content of every page the statement
    /// changes, to undo that statement alone. Once one statement of a transaction passed 64 KiB,
    /// the journal became a temporary file for the rest of it: each of a catch-up's batch
    /// transactions wrote a 4 KiB page there for nearly every page it changed (3.9 M writes
    /// for 100,000 receipts). In memory it is emptied after each statement, so this bounds it.
    ///
    /// The ceiling is SQLite's: past the threshold the journal held in memory goes to the file
    /// in one write call, and the unix VFS masks a write's length to 17 bits (0x1ffff; it
    /// assumes no call is longer). A journal of 128 KiB or more was cut short, and its statement
    /// failed with SQLITE_FULL whatever the free space (SQLite 3.40; a 4 MiB threshold broke
    /// every compaction that pruned thousands of receipts).
    package static let statementJournalSpillBytes = 0x1ffff
    /// Whether SQLite took `statementJournalSpillBytes`: it must be set before the process opens
    /// its first connection, so a host that opened SQLite before any store keeps the default.
    /// The setting is the process's: a host's own connections opened later get it too, which
    /// only keeps a little more of a statement's journal in memory.
    package static let statementJournalInMemory: Bool =
        peerlog_sqlite_statement_journal_spill(Int32(statementJournalSpillBytes)) == 0

    /// Opens (creating if needed) and migrates, one process at a time (`StoreOpenLock`); a busy
    /// store is waited for (busy timeout), not failed. `synchronous=NORMAL` in WAL mode: a committed
    /// transaction survives the process being killed (kill -9); power loss may lose the last
    /// transactions but never corrupts the file.
    ///
    /// With `.readOnly`, nothing is created, locked or migrated, and `write` throws.
    package init(path: String, access: Access = .readWrite) throws {
        _ = Store.statementJournalInMemory
        self.path = path
        self.access = access
        if access == .readOnly {
            pool = try Store.openReadOnly(path: path)
            checkpointer = nil
            return
        }
        var config = Configuration()
        config.busyMode = Store.busyMode
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Checkpoints run in the background (`checkpointer`). SQLite restarts the WAL only
            // when a write begins with every frame copied, which sustained writing never allows;
            // so the writer checkpoints by itself at `writerCheckpointPages` (cheap by then:
            // most frames are copied) and the file is cut back to `walSizeLimitBytes` on restart.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Store.writerCheckpointPages)")
            try db.execute(sql: "PRAGMA journal_size_limit = \(Store.walSizeLimitBytes)")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        let lock = try StoreOpenLock(database: path)
        pool = try DatabasePool(path: path, configuration: config)
        try Migrations.migrator.migrate(pool)
        var checkpointConfig = Configuration()
        checkpointConfig.busyMode = Store.busyMode
        checkpointer = try DatabaseQueue(path: path, configuration: checkpointConfig)
        _ = consume lock
    }

    /// A private in-memory store (tests, property runs). Same schema, no file.
    package init(inMemory: Void = ()) throws {
        _ = Store.statementJournalInMemory
        path = ":memory:"
        access = .readWrite
        let queue = try DatabaseQueue()
        try Store.migratedEmpty.get().backup(to: queue)
        pool = queue
        checkpointer = nil
    }

    /// An empty in-memory database with every migration applied, copied page by page (SQLite's
    /// backup) into each new in-memory store: running the migrations again for each one was a
    /// fifth of the CPU of a test that replays thousands of schedules on fresh replicas.
    private static let migratedEmpty = Result<DatabaseQueue, any Error> {
        let queue = try DatabaseQueue()
        try Migrations.migrator.migrate(queue)
        return queue
    }

    /// Runs `body` in one write transaction; everything it does commits together or not at all.
    package func write<T>(_ body: (StoreDB) throws -> T) throws -> T {
        guard access == .readWrite else { throw readOnlyRefusal }
        let result = try pool.write { db in try body(StoreDB(db: db)) }
        committed.add(1, ordering: .releasing)
        if let checkpointer, writes.add(1, ordering: .relaxed).newValue % Self.checkpointEveryWrites == 0,
            !checkpointing.exchange(true, ordering: .acquiringAndReleasing)
        {
            checkpointQueue.async { [weak self] in
                // Failure is harmless: the writer's own checkpoint is the safety net.
                _ = try? checkpointer.writeWithoutTransaction { try $0.checkpoint(.passive) }
                self?.checkpointing.store(false, ordering: .releasing)
            }
        }
        return result
    }

    /// Copies the WAL into the database and truncates it (after a write that failed, say for a
    /// full disk, so the WAL it grew does not keep the space). Best effort: false when readers
    /// kept it from finishing.
    @discardableResult
    package func truncateWAL() -> Bool {
        guard access == .readWrite else { return false }
        return (try? pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }) != nil
    }

    /// Whether `error` is SQLite's "database or disk is full".
    package static func isDiskFull(_ error: any Error) -> Bool {
        (error as? DatabaseError)?.resultCode == .SQLITE_FULL
    }

    /// Runs `body` on a read-only snapshot.
    package func read<T>(_ body: (StoreDB) throws -> T) throws -> T {
        if path == ":memory:", let queue = pool as? DatabaseQueue { return try readInMemory(queue, body) }
        return try pool.read { db in try body(StoreDB(db: db)) }
    }

    /// A read of the in-memory store. `DatabaseQueue.read` turns `PRAGMA query_only` on and off
    /// around each read, and SQLite expires every prepared statement whenever a flag pragma
    /// changes, so each statement after a read was compiled again (a fifth of the CPU of a test
    /// replaying thousands of schedules). Here the read runs in a transaction that is always
    /// rolled back, and one that changed a row throws, as a file store's read-only reader does.
    private func readInMemory<T>(_ queue: DatabaseQueue, _ body: (StoreDB) throws -> T) throws -> T {
        try queue.writeWithoutTransaction { db in
            let changes = db.totalChangesCount
            var result: T?
            try db.inTransaction(.deferred) {
                result = try body(StoreDB(db: db))
                return .rollback
            }
            guard db.totalChangesCount == changes, let result else {
                throw DatabaseError(resultCode: .SQLITE_READONLY, message: "a read of the store tried to write")
            }
            return result
        }
    }

    /// `PRAGMA integrity_check`: "ok" when the file is consistent.
    package func integrityCheck() throws -> String {
        try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    /// Names of the applied migrations, oldest first.
    package func appliedMigrations() throws -> [String] {
        try pool.read { db in try Migrations.migrator.appliedMigrations(db) }
    }
}

/// A database connection inside a `Store.read`/`Store.write` closure.
package struct StoreDB {
    let db: Database
    /// Row numbers this transaction looked up or gave; made with it, gone with it.
    let numbers = RowNumbers()
}

/// The numbers receipt rows name their writer by (`authors`, `certificates`, migration 0021),
/// as one transaction found or made them: a probe per writer and transaction, not per receipt.
/// Never kept past its transaction: a number given in one that rolled back names nothing (the
/// store uses no savepoints, so a transaction's rows stay or go together).
final class RowNumbers {
    var authors = [DeviceID: Int64]()
    var certificates = [CID: Int64]()
}

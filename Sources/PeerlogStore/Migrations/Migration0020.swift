import GRDB

/// The index of entities by their writer's CID dropped (docs/PROTOCOL.md §23.1): compaction was
/// its only reader ("is this receipt a current writer?"), once per pass, and it cost every write
/// 45 to 50 bytes. A pass now reads the group's current writers once (`NOT IN` over the group's
/// entities, which SQLite builds into a temporary index for the statement).
enum Migration0020 {
    static func migrate(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX IF EXISTS entities_cid")
    }
}

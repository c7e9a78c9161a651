import GRDB

/// Evidence of invalid receipts (docs/PROTOCOL.md §10.1): who signed a receipt that failed its
/// signature or certificate check, as it claims, and which peer sent it, so a forgery can be
/// traced and listed (`peerlog dead-letters`), not only deduplicated.
enum Migration0003 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE processed_receipts ADD COLUMN author BLOB;
                ALTER TABLE processed_receipts ADD COLUMN identity BLOB;
                ALTER TABLE processed_receipts ADD COLUMN peer BLOB;
                CREATE INDEX processed_receipts_invalid ON processed_receipts(processed_at) WHERE outcome = 'invalid';
                """)
    }
}

import GRDB

/// Evidence caps (docs/PROTOCOL.md §10): invalid receipts are kept per sending peer and in
/// total up to a limit, newest first; this index finds a peer's oldest ones to drop in one probe.
enum Migration0012 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX processed_receipts_invalid_peer ON processed_receipts(peer, processed_at)
                    WHERE outcome = 'invalid';
                """)
    }
}

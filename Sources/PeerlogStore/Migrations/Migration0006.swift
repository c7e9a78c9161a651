import GRDB

/// The committed `group.sequencer_changed` receipts of each group, by seq: the elected
/// authority's base (the last change) is then one index probe, not a walk back through the
/// whole committed log for every envelope.
enum Migration0006 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX receipts_sequencer_changes ON receipts(group_id, seq) WHERE type = 'group.sequencer_changed' AND seq IS NOT NULL;
                """)
    }
}

import GRDB

/// Batched envelope runs stored once (docs/PROTOCOL.md §10): each seq of a run (§3.5) was stored
/// as its whole item, the signed run header, the signature and an 8-hash Merkle path repeated in
/// every row (about 560 of the 709 bytes a committed write took in `envelopes`). An
/// `envelope_runs` row now holds the header and signature once, and the run's leaves once all of
/// its seqs are held; an item's row keeps its seq, CID and outcome, and its path only until the
/// leaves are known. Rows written before this migration keep their whole item.
enum Migration0018 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE envelope_runs (
                    id INTEGER PRIMARY KEY,
                    group_id BLOB NOT NULL,
                    first_seq INTEGER NOT NULL,
                    count INTEGER NOT NULL,
                    signature BLOB NOT NULL,
                    header BLOB NOT NULL,
                    leaves BLOB,
                    UNIQUE(group_id, first_seq, signature)
                );
                ALTER TABLE envelopes ADD COLUMN run_id INTEGER REFERENCES envelope_runs(id);
                """)
    }
}

import GRDB

/// A committed envelope names its receipt by row id (docs/PROTOCOL.md §10): every `envelopes`
/// row held the receipt's 36-byte CID, and a unique index on it held the CID again (85 of the
/// 1,072 bytes a small committed write took), though the receipt's own row holds it too. Every
/// path that writes an envelope row stores its receipt first, in the same transaction, and the
/// rows that delete a committed receipt (compaction) delete its envelope with it; so `receipt_id`
/// references `receipts(id)`, unique. Rows keep their rowid (the change stamp reads the highest).
/// The `sequencer` and `received_at` columns go too: nothing read them (32 and 6 bytes of a
/// single envelope's row), and the signed payload, or a run item's header, holds both.
/// An envelope row whose receipt is not stored (no path writes one; a read joining its receipt
/// never served it) is not carried over: its seq would be fetched again from a peer.
enum Migration0022 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE envelopes_by_receipt (
                    group_id BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    receipt_id INTEGER NOT NULL UNIQUE REFERENCES receipts(id),
                    term INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    signature BLOB NOT NULL,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    run_id INTEGER REFERENCES envelope_runs(id),
                    PRIMARY KEY(group_id, seq)
                );
                INSERT INTO envelopes_by_receipt
                    (rowid, group_id, seq, receipt_id, term, payload, signature, outcome, reason, run_id)
                    SELECT e.rowid, e.group_id, e.seq, r.id, e.term, e.payload, e.signature, e.outcome, e.reason, e.run_id
                    FROM envelopes e JOIN receipts r ON r.cid = e.cid;
                DROP TABLE envelopes;
                ALTER TABLE envelopes_by_receipt RENAME TO envelopes;
                """)
    }
}

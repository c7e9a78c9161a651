import GRDB

/// The initial schema (frozen). Byte columns hold raw bytes: CIDs in binary form (36 bytes),
/// ids as 16 or 32 raw bytes. 64-bit unsigned values (HLC, times) are stored as their
/// signed bit pattern. See docs/PROTOCOL.md §10 for the meaning of each table.
enum Migration0001 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE certificates (
                    cid BLOB PRIMARY KEY,
                    identity BLOB NOT NULL,
                    device BLOB NOT NULL,
                    noise_key BLOB NOT NULL,
                    name TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    encoded BLOB NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE receipts (
                    id INTEGER PRIMARY KEY,
                    cid BLOB NOT NULL UNIQUE,
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    author_counter INTEGER NOT NULL,
                    identity BLOB NOT NULL,
                    type TEXT NOT NULL,
                    hlc INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    signature BLOB NOT NULL,
                    certificate_cid BLOB NOT NULL REFERENCES certificates(cid),
                    received_at INTEGER NOT NULL,
                    seq INTEGER,
                    UNIQUE(group_id, author, author_counter)
                );
                CREATE INDEX receipts_tentative ON receipts(group_id, hlc, cid) WHERE seq IS NULL;
                CREATE INDEX receipts_created ON receipts(group_id) WHERE type = 'group.created';

                CREATE TABLE receipt_parents (
                    receipt_id INTEGER NOT NULL REFERENCES receipts(id),
                    parent BLOB NOT NULL,
                    PRIMARY KEY(receipt_id, parent)
                ) WITHOUT ROWID;
                CREATE INDEX receipt_parents_parent ON receipt_parents(parent);

                CREATE TABLE heads (
                    group_id BLOB NOT NULL,
                    receipt_id INTEGER NOT NULL REFERENCES receipts(id),
                    PRIMARY KEY(group_id, receipt_id)
                ) WITHOUT ROWID;

                CREATE TABLE envelopes (
                    group_id BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    cid BLOB NOT NULL UNIQUE,
                    term INTEGER NOT NULL,
                    sequencer BLOB NOT NULL,
                    received_at INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    signature BLOB NOT NULL,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    PRIMARY KEY(group_id, seq)
                );

                CREATE TABLE processed_receipts (
                    cid BLOB PRIMARY KEY,
                    group_id BLOB NOT NULL,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    processed_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE pending_receipts (
                    cid BLOB PRIMARY KEY,
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    author_counter INTEGER NOT NULL,
                    encoded BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    retry_count INTEGER NOT NULL DEFAULT 0,
                    first_seen_at INTEGER NOT NULL,
                    last_attempt_at INTEGER NOT NULL
                );
                CREATE INDEX pending_receipts_author ON pending_receipts(group_id, author, author_counter);

                CREATE TABLE pending_envelopes (
                    group_id BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    cid BLOB NOT NULL,
                    encoded BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    retry_count INTEGER NOT NULL DEFAULT 0,
                    first_seen_at INTEGER NOT NULL,
                    last_attempt_at INTEGER NOT NULL,
                    PRIMARY KEY(group_id, seq, cid)
                );

                CREATE TABLE dead_letters (
                    id INTEGER PRIMARY KEY,
                    kind TEXT NOT NULL,
                    cid BLOB NOT NULL,
                    group_id BLOB NOT NULL,
                    encoded BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    retry_count INTEGER NOT NULL,
                    first_seen_at INTEGER NOT NULL,
                    died_at INTEGER NOT NULL
                );

                CREATE TABLE backfill_requests (
                    group_id BLOB NOT NULL,
                    kind TEXT NOT NULL,
                    subject BLOB NOT NULL,
                    range_from INTEGER NOT NULL,
                    range_to INTEGER NOT NULL,
                    requested_at INTEGER NOT NULL,
                    PRIMARY KEY(group_id, kind, subject, range_from)
                ) WITHOUT ROWID;

                CREATE TABLE tombstones (
                    group_id BLOB PRIMARY KEY,
                    cid BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    deleted_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE groups (
                    group_id BLOB PRIMARY KEY,
                    state BLOB NOT NULL,
                    committed_seq INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE members (
                    group_id BLOB NOT NULL,
                    identity BLOB NOT NULL,
                    role TEXT NOT NULL,
                    status TEXT NOT NULL,
                    since_seq INTEGER NOT NULL,
                    PRIMARY KEY(group_id, identity)
                ) WITHOUT ROWID;

                CREATE TABLE entities (
                    group_id BLOB NOT NULL,
                    key TEXT NOT NULL,
                    value BLOB NOT NULL,
                    cid BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY(group_id, key)
                );

                CREATE TABLE equivocations (
                    cid BLOB PRIMARY KEY,
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    author_counter INTEGER NOT NULL,
                    encoded BLOB NOT NULL,
                    detected_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE flagged_authors (
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    from_counter INTEGER NOT NULL,
                    detected_at INTEGER NOT NULL,
                    PRIMARY KEY(group_id, author)
                ) WITHOUT ROWID;

                CREATE TABLE sequencer_refusals (
                    cid BLOB PRIMARY KEY,
                    group_id BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    refused_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL,
                    group_id BLOB NOT NULL,
                    cid BLOB NOT NULL,
                    seq INTEGER,
                    created_at INTEGER NOT NULL
                );

                CREATE TABLE peer_vectors (
                    peer BLOB NOT NULL,
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    counter INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY(peer, group_id, author)
                ) WITHOUT ROWID;

                CREATE TABLE sequencer_state (
                    group_id BLOB PRIMARY KEY,
                    term INTEGER NOT NULL DEFAULT 0,
                    voted_for BLOB,
                    last_assigned_seq INTEGER NOT NULL DEFAULT 0,
                    updated_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
    }
}

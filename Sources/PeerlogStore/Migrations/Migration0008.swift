import GRDB

/// Device revocations and the identity's devices (docs/PROTOCOL.md §3.6, §10):
/// `revocations` holds every verified revocation this replica learned of (its own identity's
/// and its peers'), one per (identity, device): a revocation only ever applies to a device
/// certified by the identity that signed it, so keying by device alone would let another
/// identity's revocation take the slot; `identity_devices` holds the certificates of this replica's
/// own identity's devices, for `peerlog device list`.
enum Migration0008 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE revocations (
                    identity BLOB NOT NULL,
                    device BLOB NOT NULL,
                    created INTEGER NOT NULL,
                    encoded BLOB NOT NULL,
                    PRIMARY KEY (identity, device)
                ) WITHOUT ROWID;
                CREATE TABLE identity_devices (
                    device BLOB PRIMARY KEY,
                    identity BLOB NOT NULL,
                    name TEXT NOT NULL,
                    created INTEGER NOT NULL,
                    certificate BLOB NOT NULL,
                    first_seen INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
    }
}

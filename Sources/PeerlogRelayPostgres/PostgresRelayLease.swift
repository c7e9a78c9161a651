#if PostgreSQL
import Logging
import NIOCore
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PostgresNIO

// §19.3: each group is lent to one process at a time, so that processes do not race for its
// seqs and each receipt is assigned (signed, reserved, committed) by one process only. A process
// without the lease hands its members' receipts over through a table; the holder ingests them
// and assigns them. Safety never rests on the lease: `UNIQUE(group, seq)` still decides.
extension PostgresRelayStore {
    /// Creates the lease and hand-over tables (inside `migrate`'s transaction and advisory lock).
    func createLeaseTables(_ c: PostgresConnection) async throws {
        try await c.query(
            """
            CREATE TABLE IF NOT EXISTS peerlog_relay_lease (
              group_id BYTEA PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)
            """, logger: logger)
        try await c.query(
            """
            CREATE TABLE IF NOT EXISTS peerlog_relay_inbox (
              id BIGSERIAL PRIMARY KEY, group_id BYTEA NOT NULL, cid BYTEA NOT NULL, receipt BYTEA NOT NULL,
              UNIQUE (group_id, cid))
            """, logger: logger)
        try await c.query(
            "CREATE INDEX IF NOT EXISTS peerlog_relay_inbox_order ON peerlog_relay_inbox (group_id, id)", logger: logger
        )
    }

    // MARK: SequenceGate: the lease

    /// Whether this process holds `group`'s lease, taking it when it is free or expired, and
    /// renewing it when less than half its term is left. Holding it costs no round trip.
    public func mayAssign(in group: GroupID) async throws -> Bool {
        let term = limits.leaseTerm
        let asked = ContinuousClock.now
        if let until = leases.withLock({ $0[group] }), until - asked > term / 2 { return true }
        let g = ByteBuffer(bytes: group.bytes)
        let me = holder
        let milliseconds = term / .milliseconds(1)
        let held = try await retrying("take the lease of group \(group)") { [self] in
            let rows = try await client.query(
                """
                INSERT INTO peerlog_relay_lease (group_id, holder, expires_at)
                VALUES (\(g), \(me), now() + \(milliseconds)::float8 * interval '1 millisecond')
                ON CONFLICT (group_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                WHERE peerlog_relay_lease.holder = EXCLUDED.holder OR peerlog_relay_lease.expires_at < now()
                RETURNING holder
                """, logger: logger)
            var taken = false
            for try await _ in rows.decode(String.self) { taken = true }
            return taken
        }
        // Our clock may run faster than the server's: count the lease as ours for 80% of its term.
        leases.withLock { $0[group] = held ? asked + term * 0.8 : nil }
        return held
    }

    /// Whether this process holds `group`'s lease by its own clock (no round trip).
    public func holdsLease(_ group: GroupID) -> Bool {
        leases.withLock { $0[group] }.map { $0 > ContinuousClock.now } ?? false
    }

    // MARK: SequenceGate: the hand-over table

    /// Stores the receipts in the hand-over table in the order given, in one statement; a
    /// receipt already there keeps its place.
    public func handOver(_ receipts: [Receipt], of group: GroupID) async throws {
        guard !receipts.isEmpty else { return }
        let groups = [ByteBuffer](repeating: ByteBuffer(bytes: group.bytes), count: receipts.count)
        let cids = receipts.map { ByteBuffer(bytes: $0.cid.bytes) }
        let bodies = receipts.map { ByteBuffer(bytes: $0.encoded) }
        _ = try await retrying("hand over \(receipts.count) receipts of group \(group)") { [self] in
            try await client.query(
                """
                INSERT INTO peerlog_relay_inbox (group_id, cid, receipt)
                SELECT g, c, r FROM unnest(\(groups)::bytea[], \(cids)::bytea[], \(bodies)::bytea[])
                  WITH ORDINALITY AS b(g, c, r, n) ORDER BY n
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }

    /// Up to `limit` handed-over receipts of `group` after position `id`, in the order handed
    /// over: (position, CID bytes, receipt).
    public func handedOver(
        group: GroupID, after id: Int64, limit: Int
    ) async throws -> [(id: Int64, cid: [UInt8], receipt: [UInt8])] {
        let g = ByteBuffer(bytes: group.bytes)
        let n = limit
        return try await retrying("read the receipts handed over in group \(group)") { [self] in
            var out = [(id: Int64, cid: [UInt8], receipt: [UInt8])]()
            let rows = try await client.query(
                "SELECT id, cid, receipt FROM peerlog_relay_inbox WHERE group_id = \(g) AND id > \(id) ORDER BY id LIMIT \(n)",
                logger: logger)
            for try await (i, c, r) in rows.decode((Int64, ByteBuffer, ByteBuffer).self) {
                out.append((i, Array(c.readableBytesView), Array(r.readableBytesView)))
            }
            return out
        }
    }

    /// Removes handed-over receipts that need no assignment any more (committed, refused, or
    /// not a receipt at all), by their CIDs' bytes.
    public func dropHandedOver(group: GroupID, _ cids: [[UInt8]]) async throws {
        guard !cids.isEmpty else { return }
        let g = ByteBuffer(bytes: group.bytes)
        let c = cids.map { ByteBuffer(bytes: $0) }
        _ = try await retrying("drop \(cids.count) handed-over receipts of group \(group)") { [self] in
            try await client.query(
                "DELETE FROM peerlog_relay_inbox WHERE group_id = \(g) AND cid = ANY(\(c)::bytea[])", logger: logger)
        }
    }

    /// The groups with handed-over receipts whose lease is this process's, free or expired:
    /// those this process should take in (a full pass; a holder that stopped leaves them).
    public func groupsToTakeOver() async throws -> Set<GroupID> {
        let me = holder
        return try await retrying("read the groups with handed-over receipts") { [self] in
            var out = Set<GroupID>()
            let rows = try await client.query(
                """
                SELECT DISTINCT i.group_id FROM peerlog_relay_inbox i
                LEFT JOIN peerlog_relay_lease l ON l.group_id = i.group_id
                WHERE l.group_id IS NULL OR l.expires_at < now() OR l.holder = \(me)
                """, logger: logger)
            for try await g in rows.decode(ByteBuffer.self) {
                if let group = try? GroupID(bytes: Array(g.readableBytesView)) { out.insert(group) }
            }
            return out
        }
    }
}
#endif

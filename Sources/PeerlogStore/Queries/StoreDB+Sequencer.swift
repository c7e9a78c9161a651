import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// What an elected voter keeps per group (docs/PROTOCOL.md §18.3): term, vote, and the
/// assignment log after `base`.
package struct StoredSequencerState: Sendable, Equatable {
    package var base: UInt64
    package var term: UInt64
    package var votedFor: DeviceID?
    package var entries: [(seq: UInt64, cid: CID, term: UInt64)]

    package init(base: UInt64, term: UInt64, votedFor: DeviceID?, entries: [(seq: UInt64, cid: CID, term: UInt64)]) {
        self.base = base
        self.term = term
        self.votedFor = votedFor
        self.entries = entries
    }

    package static func == (l: Self, r: Self) -> Bool {
        l.base == r.base && l.term == r.term && l.votedFor == r.votedFor
            && l.entries.map(\.seq) == r.entries.map(\.seq) && l.entries.map(\.cid) == r.entries.map(\.cid)
            && l.entries.map(\.term) == r.entries.map(\.term)
    }
}

extension StoreDB {
    /// The committed `group.sequencer_changed` that set the current authority: its seq and
    /// the term of its envelope; nil when the authority is still the creator's default.
    package func authorityChange(group: GroupID) throws -> (seq: UInt64, term: UInt64)? {
        // From the newest committed sequencer change backwards (Migration0006's index), the
        // first one that took effect: usually the newest, so one probe whatever the log's size.
        guard
            let row = try row(
                """
                SELECT e.seq AS seq, e.term AS term FROM receipts r INDEXED BY receipts_sequencer_changes
                JOIN envelopes e ON e.group_id = r.group_id AND e.seq = r.seq
                WHERE r.group_id = ? AND r.type = 'group.sequencer_changed' AND r.seq IS NOT NULL AND e.outcome = 'applied'
                ORDER BY r.seq DESC LIMIT 1
                """, [group.bytes.blob])
        else { return nil }
        return (UInt64(sql: row["seq"]), UInt64(sql: row["term"]))
    }

    package func sequencerState(group: GroupID) throws -> StoredSequencerState? {
        guard
            let row = try row(
                "SELECT term, voted_for, base FROM sequencer_state WHERE group_id = ?", [group.bytes.blob])
        else { return nil }
        let vote = (row["voted_for"] as Data?).map { try? DeviceID(bytes: $0.bytes) } ?? nil
        let entries = try rows(
            "SELECT seq, cid, term FROM sequencer_log WHERE group_id = ? ORDER BY seq", [group.bytes.blob]
        ).map { r in
            (seq: UInt64(sql: r["seq"]), cid: try CID(bytes: (r["cid"] as Data).bytes), term: UInt64(sql: r["term"]))
        }
        return StoredSequencerState(
            base: UInt64(sql: row["base"]), term: UInt64(sql: row["term"]), votedFor: vote, entries: entries)
    }

    /// Starts the state over for a new authority at `base`: the log is emptied, the term kept
    /// (at least `term`), the vote cleared.
    package func resetSequencer(group: GroupID, base: UInt64, term: UInt64, at now: UInt64) throws {
        try execute("DELETE FROM sequencer_log WHERE group_id = ?", [group.bytes.blob])
        try execute(
            """
            INSERT INTO sequencer_state (group_id, term, voted_for, base, updated_at) VALUES (?, ?, NULL, ?, ?)
            ON CONFLICT(group_id) DO UPDATE SET term = MAX(term, excluded.term), voted_for = NULL, base = excluded.base, updated_at = excluded.updated_at
            """, [group.bytes.blob, term.sql, base.sql, now.sql])
    }

    /// One persisted change of the voter's state: term and vote overwritten, the log cut after
    /// `truncatedAfter`, then `appended` added.
    package func saveSequencer(
        group: GroupID, term: UInt64, votedFor: DeviceID?, truncatedAfter: UInt64?,
        appended: [(seq: UInt64, cid: CID, term: UInt64)], at now: UInt64
    ) throws {
        try execute(
            "UPDATE sequencer_state SET term = ?, voted_for = ?, updated_at = ? WHERE group_id = ?",
            [term.sql, votedFor?.bytes.blob, now.sql, group.bytes.blob])
        if let cut = truncatedAfter {
            try execute("DELETE FROM sequencer_log WHERE group_id = ? AND seq > ?", [group.bytes.blob, cut.sql])
        }
        for e in appended {
            try execute(
                "INSERT OR REPLACE INTO sequencer_log (group_id, seq, cid, term) VALUES (?, ?, ?, ?)",
                [group.bytes.blob, e.seq.sql, e.cid.bytes.blob, e.term.sql])
        }
    }
}

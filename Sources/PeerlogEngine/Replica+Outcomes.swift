import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// What became of a write: the answer an app awaits (docs/PROTOCOL.md §9.7).
public enum WriteOutcome: Hashable, Sendable {
    /// No sequencer has ordered it yet. `rejected` is the tentative view's guess: nil when it
    /// applies there, else why it would not (a condition that fails on what this replica holds).
    case tentative(group: GroupID, rejected: String?)
    /// Committed at `seq`, its effect applied.
    case committed(group: GroupID, seq: UInt64)
    /// Committed at `seq` without effect: a condition failed, an operation could not apply, or
    /// the group rules refused it at that position. The same on every replica.
    case rejected(group: GroupID, seq: UInt64, reason: String)

    /// Whether the outcome is final (committed or rejected at commit).
    public var isFinal: Bool {
        if case .tentative = self { false } else { true }
    }
}

extension Replica {
    /// The outcome of the receipt `cid` as this replica knows it now; nil when it holds no such
    /// receipt (never received, or compacted away below a floor, §23.4).
    public func writeOutcome(of cid: CID) throws -> WriteOutcome? {
        try store.read { db in
            guard let held = try db.receiptOutcome(cid) else { return nil }
            return try Self.committed(held)
                ?? .tentative(group: held.group, rejected: tentativeRejection(of: cid, in: held.group, db: db))
        }
    }

    /// The outcome of `cid` once committed (applied or rejected); nil while tentative or not
    /// held. Reads one row: no tentative guess.
    public func committedOutcome(of cid: CID) throws -> WriteOutcome? {
        try store.read { db in
            try db.receiptOutcome(cid).flatMap(Self.committed)
        }
    }

    /// The final outcome of a held receipt's row, nil while it has no seq.
    private static func committed(_ held: (group: GroupID, seq: UInt64?, rejected: String?)) -> WriteOutcome? {
        guard let seq = held.seq else { return nil }
        return held.rejected.map { .rejected(group: held.group, seq: seq, reason: $0) }
            ?? .committed(group: held.group, seq: seq)
    }

    /// The tentative view's verdict on a waiting receipt: its maintained step says whether it is
    /// rejected; only then (or without a step) is the view folded for the reason.
    private func tentativeRejection(of cid: CID, in group: GroupID, db: StoreDB) throws -> String? {
        if try db.overlayGroup(group)?.fresh == true, let r = try db.loadReceipt(cid)?.receipt,
            let step = try db.overlayStep(group, OverlayPosition(r)), !step.rejected
        {
            return nil
        }
        var fold = try committedFold(group: group, db: db)
        try openSealed(in: &fold, db: db)
        for r in try tentativeReceipts(group: group, db: db) {
            let rejected = fold.apply(r, status: .tentative)
            if r.cid == cid { return rejected }
        }
        return nil
    }
}

import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// A snapshot this replica may not take: the error to report, and whether it is evidence against
/// its sender (it contradicts what is held here, or its anchor is not the authority's), kept as
/// such in `processed_receipts` like an invalid receipt.
struct SnapshotRefusal: Error {
    let error: ReplicaError
    let isEvidence: Bool
}

/// Whom a snapshot is taken from (docs/PROTOCOL.md §23.3, docs/SECURITY.md "Snapshots"): a
/// snapshot's signatures prove only that someone signed it; these checks tie it to what this
/// replica has already verified on its own. They run inside the install's transaction, so the
/// state they read is the state the install replaces.
extension Pipeline {
    /// Throws a `SnapshotRefusal` unless this replica may install `b` from `sender`:
    /// - a replica that has committed any of the group never replaces its state when it is (part
    ///   of) the group's sequencer authority, and otherwise takes only a snapshot whose anchor is
    ///   signed by the authority in force in its own committed state, walked forward through the
    ///   committed authority changes the bundle carries (each signed by the authority before it),
    ///   that agrees with every committed position and value it holds, and that comes from a
    ///   device of that authority (the solo sequencer, a voter): the state at a seq is the
    ///   sequencer's to vouch for, so no other member can put one on a replica that holds the
    ///   group (a relay is never one: in a relay group a member below every floor takes the log
    ///   from the relay, which keeps all of it);
    /// - a replica that holds nothing committed takes one only from a sender the node trusts to
    ///   start a group (`trustedForBootstrap`: its own identity, or one named by `allow` or a
    ///   pairing), anchored by the authority the snapshot names (the newest snapshot may predate
    ///   this identity's invitation: the log after it brings that).
    mutating func checkSnapshotTrust(
        _ b: VerifiedSnapshot, from sender: IdentityID, device: DeviceID?, trustedForBootstrap: Bool
    ) throws {
        let g = b.snapshot.group
        func refuse(_ why: String, evidence: Bool = false) -> SnapshotRefusal {
            SnapshotRefusal(error: ReplicaError(.snapshotRefused, "snapshot refused: \(why)"), isEvidence: evidence)
        }
        let held = try db.committedSeq(group: g)
        guard held > 0, let blob = try db.groupStateBlob(group: g) else {
            guard trustedForBootstrap || sender == local.identity else {
                throw refuse(
                    "this device holds nothing of group \(g) and starts a group only from its own devices or an identity named by allow or a pairing, not \(sender)"
                )
            }
            guard b.snapshot.state.authority.signers.contains(b.anchor.sequencer) else {
                throw refuse("its anchor is not signed by the sequencer authority it names", evidence: true)
            }
            return
        }
        let state = try GroupState(storedBytes: blob)
        guard !state.authority.signers.contains(local.device) else {
            throw refuse("this device sequences group \(g): it never replaces its own committed state")
        }
        // Its sender must be a member here, not only in what it sends (a relay never is).
        guard state.members[sender]?.status == .active else {
            throw refuse("the sender \(sender) is not an active member of group \(g) in this device's committed state")
        }
        // Nothing to check against when it is not ahead: `install` counts it a duplicate.
        guard b.snapshot.seq > held else { return }
        // Every committed position it names that is held here must be the one held here.
        let positions = b.history.map { ($0.1.seq, $0.0.cid) } + b.authorityChanges.map { ($0.1.seq, $0.0.cid) }
        for (seq, cid) in positions where seq <= held {
            if let mine = try db.envelopeCID(group: g, seq: seq), mine != cid {
                throw refuse(
                    "it names \(cid) at seq \(seq) of group \(g), where \(mine) is committed here", evidence: true)
            }
        }
        // A value it says was committed at or below our mark, and not written since, is ours too.
        for e in b.snapshot.entities where e.seq <= held {
            if let mine = try db.entity(group: g, key: e.key), mine.cid != e.cid {
                throw refuse(
                    "it holds \(e.cid) for key \"\(e.key)\" committed at seq \(e.seq), where \(mine.cid) is committed here",
                    evidence: true)
            }
        }
        // From the authority committed here to the one that signed the anchor; every key and
        // authority item above our mark must be signed by the authority in force at its seq.
        var authority = state.authority
        let items =
            (b.history.map { ($0.0, $0.1, SequencerAuthority?.none) } + b.authorityChanges.map { ($0.0, $0.1, $0.2) })
            .filter { $0.1.seq > held && $0.1.seq < b.snapshot.seq }.sorted { $0.1.seq < $1.1.seq }
        for (r, e, next) in items {
            guard authority.signers.contains(e.sequencer) else {
                throw refuse(
                    "its \(r.type) receipt \(r.cid) at seq \(e.seq) is not signed by the sequencer authority in force",
                    evidence: true)
            }
            if let next { authority = next }
        }
        guard authority.signers.contains(b.anchor.sequencer) else {
            throw refuse(
                "its anchor is signed by \(b.anchor.sequencer), not by the sequencer authority in force in group \(g) here",
                evidence: true)
        }
        let vouching = authority
        if let last = b.authorityChanges.last, last.1.seq == b.snapshot.seq { authority = last.2 }
        guard b.snapshot.state.authority == authority else {
            throw refuse("its state names a sequencer authority that no committed change here leads to", evidence: true)
        }
        guard let device, vouching.signers.contains(device) else {
            throw refuse(
                "this device holds group \(g) and takes a snapshot only from a device of its sequencer authority, not \(device.map(\.description) ?? "an unknown device")"
            )
        }
    }
}

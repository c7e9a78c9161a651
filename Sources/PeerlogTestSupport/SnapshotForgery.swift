import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// A member's forged snapshot, built the way a hostile tester built one against a shipped
/// release: a genuine snapshot moved a few seqs ahead, the forger made solo sequencer and owner,
/// one value changed, the state hash recomputed, and a fresh anchor receipt and envelope signed
/// with the forger's own device key. Every signature in it verifies; only whom it is signed by
/// gives it away (docs/PROTOCOL.md §23.3).
public enum SnapshotForgery {
    /// `genuine` forged by `forger` (an active member's device): `ahead` seqs further, with
    /// `key` set to `value`.
    public static func forge(
        _ genuine: SnapshotBundle, by forger: LocalDevice, ahead: UInt64 = 5, key: String, value: CBOR
    ) throws -> SnapshotBundle {
        let real = try GroupSnapshot(encoded: genuine.snapshot)
        var state = real.state
        state.authority = .solo(forger.device)
        state.members[forger.identity]?.role = .owner
        let seq = real.seq + ahead
        let counter = (real.authors.first { $0.0 == forger.device }?.1 ?? 0) + ahead
        let receipt = try Receipt.sign(
            Receipt.Draft(
                group: real.group, type: "entity.put", counter: counter,
                hlc: HLCTimestamp(physical: 1_900_000_000_000, logical: 0),
                body: .textMap(["key": .text(key), "value": value])),
            signingKey: forger.signingKey, certificate: forger.certificate)
        let entities =
            real.entities.filter { $0.key != key } + [
                GroupSnapshot.Entity(key: key, value: value, cid: receipt.cid, seq: seq)
            ]
        let authors = real.authors.filter { $0.0 != forger.device } + [(forger.device, counter)]
        let forged = GroupSnapshot(group: real.group, seq: seq, state: state, entities: entities, authors: authors)
        let anchor = try Envelope.sign(
            group: real.group, seq: seq, receipt: receipt.cid, term: 1, receivedAt: 1_900_000_000_000,
            key: forger.signingKey)
        return SnapshotBundle(
            snapshot: forged.encoded, anchorEnvelope: anchor.encoded, anchorReceipt: receipt.encoded,
            keyHistory: genuine.keyHistory, authorityHistory: genuine.authorityHistory)
    }
}

import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Synchronization
import Testing

/// The shared table's rules in memory (the real one is PostgreSQL, PeerlogRelayPostgresTests):
/// one receipt per seq, one seq per receipt, a batch stored whole or not at all, and a batch
/// already stored exactly (a retry whose answer was lost) admitted again.
final class TableGate: SequenceGate {
    let rows = Mutex<[UInt64: CID]>([:])
    /// The seqs of every batch asked, in order.
    let asked = Mutex<[[UInt64]]>([])

    func reserve(_ batch: [(envelope: Envelope, receipt: Receipt)]) throws -> SequenceReservation {
        asked.withLock { $0.append(batch.map(\.envelope.seq)) }
        return rows.withLock { rows in
            if batch.allSatisfy({ rows[$0.envelope.seq] == $0.envelope.receipt }) { return .reserved }
            let held = Set(rows.values)
            if batch.contains(where: { rows[$0.envelope.seq] != nil || held.contains($0.envelope.receipt) }) { return .taken }
            for (e, _) in batch { rows[e.seq] = e.receipt }
            return .reserved
        }
    }
}

/// A relay with a shared store reserves a pass's assignments in batches (docs/PROTOCOL.md
/// §19.3): each batch is committed locally only if the store admits all of it, and a refused
/// batch leaves nothing behind, in the store or in what the transaction reports.
@Suite struct GatedBatchTests {
    /// Alice's relayed group held by a relay replica with `gate`, and its committed seq.
    static func relayed(_ alice: Node, gate: TableGate, limits: ReplicaLimits = ReplicaLimits()) throws -> (group: GroupID, relay: Replica, base: UInt64) {
        let bob = try Node("bob"), probe = try Node("relay")
        let group = try RelayAuthorityTests.relayedGroup(alice: alice, bob: bob, relay: probe)
        let relay = Replica(store: try Store(), device: probe.device, limits: limits, sequenceGate: gate)
        let (receipts, envelopes) = try alice.holdings(group)
        _ = try relay.ingest(receipts: receipts, envelopes: envelopes)
        return (group, relay, try relay.committedSeq(of: group))
    }

    /// Change-log rows of commits after `cursor`: what a refused pass must not have written.
    static func commitsLogged(_ relay: Replica, after cursor: Int64) throws -> [ChangeLogRow] {
        try relay.changes(after: cursor, limit: 100_000).filter { $0.kind == "committed" }
    }

    @Test func aPassIsReservedInOneCall() throws {
        let alice = try Node("alice"), gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate)
        let writes = try (1...20).map { try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt }
        let report = try relay.ingest(receipts: writes)
        #expect(report.committed == 20)
        #expect(gate.asked.withLock { $0 } == [Array((base + 1)...(base + 20))])
        #expect(try relay.log(of: group, view: .committed).suffix(20).map(\.receipt.cid) == writes.map(\.cid))
        #expect(try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed))
    }

    @Test func aRefusedBatchLeavesNothingAndTheNextPassCommitsItAll() throws {
        let alice = try Node("alice"), carol = try Node("carol"), gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate)
        // The relay holds these in its tentative view first (nothing to sequence: it is not caught up).
        let logged = try relay.changeLogBounds().last
        let early = try (1...5).map { try alice.replica.append(.entityPut(key: "k\($0)", value: .int(Int64($0))), to: group).receipt }
        let added = try alice.replica.append(.memberAdded(identity: carol.identity, role: .member), to: group).receipt
        let late = try alice.replica.append(.entityPut(key: "k1", value: "late"), to: group).receipt
        // Another process holds base+1 with Alice's last write, which this relay has not seen.
        let other = try alice.replica.append(.entityPut(key: "other", value: "x"), to: group).receipt
        let otherEnvelope = try Envelope.sign(group: group, seq: base + 1, receipt: other.cid, term: 0, receivedAt: 1, key: relay.local.signingKey)
        #expect(try gate.reserve(otherEnvelope, receipt: other) == .reserved)
        #expect(try relay.ingest(receipts: early).contended == [group])
        // A group operation and an entity write in the next refused pass: neither may leak into
        // the committed state, the report, the change log or the maintained tentative view.
        let report = try relay.ingest(receipts: [added, late])
        #expect(report.contended == [group] && report.committed == 0)
        #expect(!report.events.contains { if case .committed = $0 { true } else { false } }, "\(report.events)")
        #expect(try relay.committedSeq(of: group) == base)
        #expect(try Self.commitsLogged(relay, after: logged).isEmpty)
        #expect(try relay.state(of: group, view: .committed)?.members[carol.identity] == nil)
        #expect(try relay.state(of: group, view: .tentative)?.members[carol.identity] != nil)
        #expect(try relay.entity("k1", in: group, view: .tentative)?.value == "late")
        #expect(try relay.checkTentativeOverlay(of: group) == .matches)
        #expect(gate.rows.withLock { $0.count } == 1)

        // Caught up with the other process's base+1, the relay assigns the rest in one batch.
        let resumed = try relay.ingest(receipts: [other], envelopes: [otherEnvelope])
        #expect(resumed.committed == 8 && resumed.contended.isEmpty)
        #expect(gate.asked.withLock { $0 }.last == Array((base + 2)...(base + 8)))
        #expect(try relay.log(of: group, view: .committed).suffix(8).map(\.receipt.cid) == [other.cid] + early.map(\.cid) + [added.cid, late.cid])
        let table = gate.rows.withLock { $0 }
        #expect(table.count == 8)
        for item in try relay.log(of: group, view: .committed).suffix(8) {
            if case .committed(let seq) = item.status { #expect(table[seq] == item.receipt.cid, "seq \(seq)") }
        }
        #expect(try relay.state(of: group, view: .committed)?.members[carol.identity] != nil)
        #expect(try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed))
        #expect(try relay.tentativeCount(of: group) == 0)
        #expect(try relay.checkTentativeOverlay(of: group) == .matches)
    }

    @Test func aLongPassIsReservedInBoundedBatchesAndStopsAtTheFirstRefused() throws {
        var limits = ReplicaLimits()
        limits.maxReservationBatch = 3
        let alice = try Node("alice"), gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate, limits: limits)
        let writes = try (1...7).map { try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt }
        // Another process holds base+5 with a receipt this relay does not have.
        let stranger = try alice.replica.append(.entityPut(key: "stranger", value: "s"), to: group).receipt
        gate.rows.withLock { $0[base + 5] = stranger.cid }
        let report = try relay.ingest(receipts: writes)
        // base+1…base+3 admitted and committed; base+4…base+6 refused whole: none of it kept.
        #expect(gate.asked.withLock { $0 } == [[base + 1, base + 2, base + 3], [base + 4, base + 5, base + 6]])
        #expect(report.committed == 3 && report.contended == [group])
        #expect(try relay.committedSeq(of: group) == base + 3)
        #expect(try relay.log(of: group, view: .committed).suffix(3).map(\.receipt.cid) == Array(writes.prefix(3).map(\.cid)))
        #expect(try relay.tentativeCount(of: group) == 4)
        #expect(try relay.checkTentativeOverlay(of: group) == .matches)
    }
}

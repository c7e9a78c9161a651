import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Synchronization
import Testing

/// The shared table's rules in memory (the real one is PostgreSQL, PeerlogRelayPostgresTests):
/// one receipt per seq, one seq per receipt, a batch stored whole or not at all, and a batch
/// already stored exactly (a retry whose answer was lost) admitted again.
final class TableGate: SequenceGate {
    let rows = Mutex<[UInt64: CID]>([:])
    /// The seqs of every batch asked, in order.
    let asked = Mutex<[[UInt64]]>([])
    /// The envelopes of every batch asked, in order.
    let envelopes = Mutex<[[Envelope]]>([])
    /// A batch holding this seq fails once (the store unreachable), storing nothing.
    let failOnce = Mutex<UInt64?>(nil)

    func reserve(_ batch: [(envelope: Envelope, receipt: Receipt)]) async throws -> SequenceReservation {
        asked.withLock { $0.append(batch.map(\.envelope.seq)) }
        envelopes.withLock { $0.append(batch.map(\.envelope)) }
        if let seq = failOnce.withLock({ f in batch.contains { $0.envelope.seq == f } ? f.take() : nil }) {
            throw ReplicaError(.storeCorrupt, "injected failure at seq \(seq)")
        }
        return rows.withLock { rows in
            if batch.allSatisfy({ rows[$0.envelope.seq] == $0.envelope.receipt }) { return .reserved }
            let held = Set(rows.values)
            if batch.contains(where: { rows[$0.envelope.seq] != nil || held.contains($0.envelope.receipt) }) {
                return .taken
            }
            for (e, _) in batch { rows[e.seq] = e.receipt }
            return .reserved
        }
    }
}

/// A relay with a shared store reserves a pass's assignments in batches (docs/PROTOCOL.md
/// §19.3), between transactions: the write that stores receipts assigns nothing, the gate's
/// driver then plans, reserves and commits; each batch is committed locally only if the store
/// admits all of it, and a refused batch leaves nothing behind, in the store or in the report.
@Suite struct GatedBatchTests {
    /// Alice's relayed group held by a relay replica with `gate`, and its committed seq.
    static func relayed(
        _ alice: TestReplica, gate: TableGate, limits: ReplicaLimits = ReplicaLimits()
    ) throws -> (group: GroupID, relay: Replica, base: UInt64) {
        let bob = try TestReplica("bob")
        let probe = try TestReplica("relay")
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

    @Test func aPassIsReservedInOneCall() async throws {
        let alice = try TestReplica("alice")
        let gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate)
        let writes = try (1...20).map {
            try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt
        }
        let stored = try relay.ingest(receipts: writes)
        #expect(stored.stored == 20 && stored.committed == 0, "the write assigns nothing")
        #expect(gate.asked.withLock { $0 }.isEmpty)
        let report = try await relay.sequenceThroughGate()
        #expect(report.committed == 20)
        #expect(gate.asked.withLock { $0 } == [Array((base + 1)...(base + 20))])
        #expect(try relay.log(of: group, view: .committed).suffix(20).map(\.receipt.cid) == writes.map(\.cid))
        #expect(try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed))
        // Nothing is left for the gate.
        #expect(try await relay.sequenceThroughGate().committed == 0)
        #expect(gate.asked.withLock { $0 }.count == 1)
    }

    /// A pass's seqs are signed as runs of at most `EnvelopeRun.maxLength` (one signature each,
    /// every item valid on its own); a pass of one seq as a single envelope.
    @Test func aPassIsSignedAsRuns() async throws {
        let alice = try TestReplica("alice")
        let gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate)
        let count = Int(EnvelopeRun.maxLength) + 3
        let writes = try (1...count).map {
            try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt
        }
        _ = try relay.ingest(receipts: writes)
        #expect(try await relay.sequenceThroughGate().committed == count)
        let batch = try #require(gate.envelopes.withLock { $0 }.first)
        #expect(batch.map(\.seq) == Array((base + 1)...(base + UInt64(count))))
        #expect(batch.allSatisfy { $0.run != nil && $0.verify() == .valid })
        #expect(Set(batch.map(\.signature)).count == 2, "a run of \(EnvelopeRun.maxLength) and a run of 3")
        // What the members are sent verifies where they check it: a fresh replica ingests the
        // relay's log and commits every seq.
        let (receipts, envelopes) = try alice.holdings(group)
        let member = try TestReplica("carol")
        _ = try member.replica.ingest(receipts: receipts, envelopes: envelopes)
        _ = try member.replica.ingest(receipts: writes, envelopes: batch)
        #expect(try member.replica.committedSeq(of: group) == base + UInt64(count))

        let one = try alice.replica.append(.entityPut(key: "one", value: "v"), to: group).receipt
        _ = try relay.ingest(receipts: [one])
        #expect(try await relay.sequenceThroughGate().committed == 1)
        let single = try #require(gate.envelopes.withLock { $0 }.last?.first)
        #expect(single.run == nil && single.seq == base + UInt64(count) + 1 && single.verify() == .valid)
    }

    /// A relay that reserves at most 3 seqs a batch and plans over windows of at least 4.
    static func windowOfFour() throws -> (
        alice: TestReplica, gate: TableGate, group: GroupID, relay: Replica, base: UInt64
    ) {
        var limits = ReplicaLimits()
        limits.maxReservationBatch = 3
        limits.sequencingWindow = 4
        let alice = try TestReplica("alice")
        let gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate, limits: limits)
        return (alice, gate, group, relay, base)
    }

    /// A gated pass reads a window of the backlog (the earliest by HLC), not all of it; the
    /// passes still assign the whole backlog, in the order a pass over all of it would.
    @Test func aBacklogBeyondTheWindowIsAssignedInTentativeOrder() async throws {
        let (alice, gate, group, relay, base) = try Self.windowOfFour()
        let writes = try (1...14).map {
            try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt
        }
        _ = try relay.ingest(receipts: writes)
        #expect(try await relay.sequenceThroughGate().committed == 14)
        #expect(gate.asked.withLock { $0 }.map(\.count) == [3, 3, 3, 3, 2])
        #expect(try relay.log(of: group, view: .committed).suffix(14).map(\.receipt.cid) == writes.map(\.cid))
        #expect(try relay.committedSeq(of: group) == base + 14)
        #expect(try relay.checkTentativeOverlay(of: group) == .matches)
    }

    /// Receipts whose parent has a later clock than theirs (a clock that ran backwards) fill the
    /// window with receipts none of which can go first: the pass is planned over the whole
    /// backlog instead, and the group does not stall.
    @Test func aWindowOfReceiptsWaitingForALaterParentDoesNotStall() async throws {
        let (alice, _, group, relay, base) = try Self.windowOfFour()
        let last = try alice.replica.append(.entityPut(key: "first", value: "v"), to: group).receipt
        let late = try handmade(
            alice.device, group: group, counter: last.counter + 1, op: .entityPut(key: "parent", value: "p"),
            hlc: last.hlc.physical + 10_000_000, parents: [last.cid])
        let children = try (1...7).map {
            try handmade(
                alice.device, group: group, counter: last.counter + 1 + UInt64($0),
                op: .entityPut(key: "c\($0)", value: "c"), hlc: last.hlc.physical + UInt64($0), parents: [late.cid])
        }
        _ = try relay.ingest(receipts: [last, late] + children)
        #expect(try await relay.sequenceThroughGate().committed == 9)
        #expect(
            try relay.log(of: group, view: .committed).suffix(9).map(\.receipt.cid)
                == [last.cid, late.cid] + children.map(\.cid))
        #expect(try relay.committedSeq(of: group) == base + 9)
        #expect(try relay.tentativeCount(of: group) == 0)
    }

    /// Receipts the relay refused stay tentative at the front of the order; the window skips
    /// them, and the writes behind them are assigned.
    @Test func refusedReceiptsAtTheFrontAreSkippedByTheWindow() async throws {
        let (alice, gate, group, relay, base) = try Self.windowOfFour()
        let stranger = try TestReplica("stranger")
        let last = try alice.replica.append(.entityPut(key: "first", value: "v"), to: group).receipt
        func signed(_ n: UInt64, _ op: GroupOperation) throws -> Receipt {
            try handmade(
                alice.device, group: group, counter: last.counter + n, op: op, hlc: last.hlc.physical + n,
                parents: [last.cid])
        }
        let removals = try (1...6).map { try signed(UInt64($0), .memberRemoved(identity: stranger.identity)) }
        let writes = try (7...11).map { try signed(UInt64($0), .entityPut(key: "k\($0)", value: "v")) }
        _ = try relay.ingest(receipts: [last] + removals + writes)
        let report = try await relay.sequenceThroughGate()
        #expect(report.committed == 6, "\(report.rejected)")
        #expect(try relay.log(of: group, view: .committed).suffix(6).map(\.receipt.cid) == ([last] + writes).map(\.cid))
        #expect(try relay.committedSeq(of: group) == base + 6)
        #expect(try relay.tentativeCount(of: group) == 6, "the refused removals stay tentative")
        // The first window (6) holds `last` and five removals; the next ones skip all refused.
        #expect(gate.asked.withLock { $0 }.map(\.count) == [1, 3, 2])
        #expect(try await relay.sequenceThroughGate().committed == 0)
    }

    @Test func aRefusedBatchLeavesNothingAndTheNextPassCommitsItAll() async throws {
        let alice = try TestReplica("alice")
        let carol = try TestReplica("carol")
        let gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate)
        // The relay holds these in its tentative view first (nothing to sequence: it is not caught up).
        let logged = try relay.changeLogBounds().last
        let early = try (1...5).map {
            try alice.replica.append(.entityPut(key: "k\($0)", value: .int(Int64($0))), to: group).receipt
        }
        let added = try alice.replica.append(.memberAdded(identity: carol.identity, role: .member), to: group).receipt
        let late = try alice.replica.append(.entityPut(key: "k1", value: "late"), to: group).receipt
        // Another process holds base+1 with Alice's last write, which this relay has not seen.
        let other = try alice.replica.append(.entityPut(key: "other", value: "x"), to: group).receipt
        let otherEnvelope = try Envelope.sign(
            group: group, seq: base + 1, receipt: other.cid, term: 0, receivedAt: 1, key: relay.local.signingKey)
        #expect(try await gate.reserve(otherEnvelope, receipt: other) == .reserved)
        _ = try relay.ingest(receipts: early)
        #expect(try await relay.sequenceThroughGate().contended == [group])
        // A group operation and an entity write in the next refused pass: neither may leak into
        // the committed state, the report, the change log or the maintained tentative view.
        _ = try relay.ingest(receipts: [added, late])
        let report = try await relay.sequenceThroughGate()
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
        let caughtUp = try relay.ingest(receipts: [other], envelopes: [otherEnvelope])
        let resumed = try await relay.sequenceThroughGate()
        #expect(caughtUp.committed == 1 && resumed.committed == 7 && resumed.contended.isEmpty)
        #expect(gate.asked.withLock { $0 }.last == Array((base + 2)...(base + 8)))
        #expect(
            try relay.log(of: group, view: .committed).suffix(8).map(\.receipt.cid) == [other.cid] + early.map(\.cid)
                + [added.cid, late.cid])
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

    /// A relay whose gate reserves at most 3 seqs per batch, and 7 writes of alice's waiting for it.
    static func sevenWritesInBatchesOfThree() throws -> (
        alice: TestReplica, gate: TableGate, group: GroupID, relay: Replica, base: UInt64, writes: [Receipt]
    ) {
        var limits = ReplicaLimits()
        limits.maxReservationBatch = 3
        let alice = try TestReplica("alice")
        let gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate, limits: limits)
        let writes = try (1...7).map {
            try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt
        }
        return (alice, gate, group, relay, base, writes)
    }

    @Test func aLongPassIsReservedInBoundedBatchesAndStopsAtTheFirstRefused() async throws {
        let (alice, gate, group, relay, base, writes) = try Self.sevenWritesInBatchesOfThree()
        // Another process holds base+5 with a receipt this relay does not have.
        let stranger = try alice.replica.append(.entityPut(key: "stranger", value: "s"), to: group).receipt
        gate.rows.withLock { $0[base + 5] = stranger.cid }
        _ = try relay.ingest(receipts: writes)
        let report = try await relay.sequenceThroughGate()
        // base+1…base+3 admitted and committed; base+4…base+6 refused whole: none of it kept.
        #expect(gate.asked.withLock { $0 } == [[base + 1, base + 2, base + 3], [base + 4, base + 5, base + 6]])
        #expect(report.committed == 3 && report.contended == [group])
        #expect(try relay.committedSeq(of: group) == base + 3)
        #expect(
            try relay.log(of: group, view: .committed).suffix(3).map(\.receipt.cid)
                == Array(writes.prefix(3).map(\.cid)))
        #expect(try relay.tentativeCount(of: group) == 4)
        #expect(try relay.checkTentativeOverlay(of: group) == .matches)
    }

    @Test func aFailingGateKeepsTheAdmittedBatchesAndTheGroupIsTriedAgain() async throws {
        let (_, gate, group, relay, base, writes) = try Self.sevenWritesInBatchesOfThree()
        gate.failOnce.withLock { $0 = base + 5 }
        _ = try relay.ingest(receipts: writes)
        await #expect { try await relay.sequenceThroughGate() } throws: {
            "\($0)".contains("injected failure at seq \(base + 5)")
        }
        // The first batch was admitted and committed; nothing of the failed one is anywhere.
        #expect(try relay.committedSeq(of: group) == base + 3)
        #expect(gate.rows.withLock { $0.keys.sorted() } == [base + 1, base + 2, base + 3])
        #expect(try relay.tentativeCount(of: group) == 4)
        #expect(try relay.checkTentativeOverlay(of: group) == .matches)
        // The group stays noted: the next call goes on from base+4.
        let again = try await relay.sequenceThroughGate()
        #expect(again.committed == 4 && again.contended.isEmpty)
        #expect(try relay.log(of: group, view: .committed).suffix(7).map(\.receipt.cid) == writes.map(\.cid))
        #expect(try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed))
    }

    @Test func theDriverCommitsWhatWritesLeaveUntilCancelled() async throws {
        let alice = try TestReplica("alice")
        let gate = TableGate()
        let (group, relay, base) = try Self.relayed(alice, gate: gate)
        let driver = Task { await relay.runSequenceGate() }
        defer { driver.cancel() }
        for round in 1...3 {
            let writes = try (1...4).map {
                try alice.replica.append(.entityPut(key: "r\(round)-\($0)", value: "v"), to: group).receipt
            }
            _ = try relay.ingest(receipts: writes)
            let expected = base + UInt64(4 * round)
            for _ in 0..<500 where try relay.committedSeq(of: group) < expected {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(try relay.committedSeq(of: group) == expected, "round \(round)")
        }
        driver.cancel()
        await driver.value  // returns once cancelled, though nothing is waiting
        #expect(gate.rows.withLock { $0.count } == 12)
        #expect(try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed))
    }
}

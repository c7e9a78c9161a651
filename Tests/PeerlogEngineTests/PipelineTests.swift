import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Synchronization
import Testing

struct PipelineTests {
    @Test func soloGroupCommitsAtOnceOffline() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "trip")
        let put = try alice.replica.append(.entityPut(key: "color", value: "blue"), to: group)
        #expect(put.seq == 2)
        #expect(try alice.get("color", group, .committed) == "blue")
        #expect(try alice.replica.tentativeCount(of: group) == 0)
        let committed = try alice.replica.changes(after: 0, group: group).filter { $0.kind == "committed" }
        #expect(
            committed.map { [$0.firstSeq, $0.lastSeq] } == [[1, 1], [2, 2]],
            "each write commits with its change-log rows")
        #expect(
            try alice.replica.log(of: group, view: .committed).map(\.status) == [
                .committed(seq: 1), .committed(seq: 2),
            ])
    }

    @Test func gapThenBackfillThenDrain() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<5 { try alice.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: group) }
        let h = try alice.holdings(group)
        #expect(h.envelopes.count == 6)
        _ = try bob.replica.ingest(receipts: h.receipts, envelopes: Array(h.envelopes[0..<2]))
        let gap = try bob.replica.ingest(receipts: [], envelopes: [h.envelopes[5]])
        #expect(try bob.replica.vector(of: group).committed == 2)
        #expect(gap.actions == [.requestSeqRange(group: group, from: 3, to: 5)])
        // The same gap again: the in-flight guard holds back a second request…
        #expect(try bob.replica.ingest(receipts: [], envelopes: [h.envelopes[5]]).actions.isEmpty)
        // …until it times out.
        bob.clock.advance(bob.replica.limits.backfillGuardMillis)
        #expect(try bob.replica.retryPending().actions == [.requestSeqRange(group: group, from: 3, to: 5)])
        let filled = try bob.replica.ingest(receipts: [], envelopes: Array(h.envelopes[2..<5]))
        #expect(filled.committed == 4, "3, 4, 5 and the queued 6 drain in order")
        #expect(
            try bob.replica.store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM backfill_requests") } == 0,
            "the answered request is cleared once its seqs are held")
        #expect(try bob.hashes(group) == alice.hashes(group))
        #expect(try bob.replica.pending().isEmpty)
    }

    /// An author's later counters first, all queued; then the first ones: the queue drains
    /// into the store in counter order, a page of the next counter at a time.
    @Test func laterCountersFirstThenTheFirstDrainsTheQueueInOrder() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<300 { try alice.replica.append(.entityPut(key: "k\(i % 7)", value: .int(Int64(i))), to: group) }
        let h = try alice.holdings(group)
        let late = Array(h.receipts.dropFirst(2).reversed())
        let queued = try bob.replica.ingest(receipts: late)
        #expect(queued.queued == late.count && queued.stored == 0)
        #expect(try bob.replica.pending().count == late.count)
        let drained = try bob.replica.ingest(receipts: Array(h.receipts.prefix(2)), envelopes: h.envelopes)
        #expect(drained.stored == h.receipts.count)
        #expect(try bob.replica.pending().isEmpty)
        #expect(try bob.hashes(group) == alice.hashes(group))
        #expect(
            try bob.replica.log(of: group, view: .committed).map(\.receipt.cid)
                == alice.replica.log(of: group, view: .committed).map(\.receipt.cid))
    }

    @Test func outOfOrderAndDuplicatedEnvelopesCommitInSeqOrder() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<8 { try alice.replica.append(.entityPut(key: "k", value: .int(Int64(i))), to: group) }
        let h = try alice.holdings(group)
        var committedSeqs = [UInt64]()
        let events = Mutex<[UInt64]>([])
        bob.replica.subscribe { if case .committed(_, let seq, _, _, _) = $0 { events.withLock { $0.append(seq) } } }
        for e in (h.envelopes + h.envelopes).reversed() { _ = try bob.replica.ingest(receipts: [], envelopes: [e]) }
        _ = try bob.replica.ingest(receipts: h.receipts.reversed())
        committedSeqs = events.withLock { $0 }
        #expect(committedSeqs == Array(1...9))
        #expect(try bob.get("k", group, .committed) == 7)
        #expect(try bob.hashes(group) == alice.hashes(group))
    }

    @Test func duplicateReceiptsAndReplayAfterRestart() throws {
        let dir = try TestSupport.temporaryDirectory()
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        try alice.replica.append(.entityPut(key: "a", value: 1), to: group)
        let h = try alice.holdings(group)
        let device = try LocalDevice.generate(name: "bob", createdAt: 1)
        let first = try Replica(path: dir + "/r.sqlite", device: device)
        #expect(try first.ingest(receipts: h.receipts, envelopes: h.envelopes).committed == 2)
        #expect(try first.ingest(receipts: h.receipts, envelopes: h.envelopes).duplicates == 4)
        let hash = try first.stateHash(of: group, view: .tentative)
        // A new process opening the same file: everything is still known, nothing applies twice.
        let reopened = try Replica(path: dir + "/r.sqlite", device: device)
        let again = try reopened.ingest(receipts: h.receipts, envelopes: h.envelopes)
        #expect(again.duplicates == 4 && again.stored == 0 && again.committed == 0)
        #expect(try reopened.stateHash(of: group, view: .tentative) == hash)
    }

    @Test func tombstonedGroupIgnoresLateReceipts() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        let late = try bob.replica.append(.entityPut(key: "late", value: 1), to: group)  // tentative on bob
        try alice.replica.append(.deleted, to: group)
        #expect(throws: ReplicaError.self) { try alice.replica.append(.entityPut(key: "x", value: 1), to: group) }
        let report = try alice.replica.ingest(receipts: [late.receipt])
        #expect(report.ignored == 1 && report.stored == 0)
        try alice.send(group, to: bob)
        #expect(try bob.replica.state(of: group, view: .committed)?.status == .deleted)
        #expect(try bob.replica.entities(in: group, view: .tentative).isEmpty, "nothing applies to a tombstoned group")
        let more = try handmade(bob.device, group: group, counter: 99, op: .entityPut(key: "y", value: 1))
        #expect(try bob.replica.ingest(receipts: [more]).ignored == 1)
    }

    @Test func equivocationKeepsEvidenceAndFlagsTheAuthor() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob])
        try alice.send(group, to: carol)
        let counter = try bob.replica.vector(of: group).authors.first { $0.0 == bob.device.device }!.1 + 1
        let one = try handmade(bob.device, group: group, counter: counter, op: .entityPut(key: "x", value: 1), hlc: 10)
        let two = try handmade(bob.device, group: group, counter: counter, op: .entityPut(key: "x", value: 2), hlc: 11)
        let next = try handmade(
            bob.device, group: group, counter: counter + 1, op: .entityPut(key: "y", value: 3), hlc: 12)
        let seen = Mutex<[ReplicaEvent]>([])
        carol.replica.subscribe { e in seen.withLock { $0.append(e) } }
        _ = try carol.replica.ingest(receipts: [one, next])
        let report = try carol.replica.ingest(receipts: [two])
        #expect(
            report.events.contains(
                .equivocation(
                    group: group, author: bob.device.device, counter: counter, cids: [one.cid, two.cid].sorted())))
        #expect(seen.withLock { $0.contains { if case .equivocation = $0 { true } else { false } } })
        // Neither half (nor what follows) applies tentatively.
        #expect(try carol.get("x", group) == nil && carol.get("y", group) == nil)
        // The sequencer commits one of them: that one applies, the other stays evidence.
        _ = try alice.replica.ingest(receipts: [two])
        #expect(try alice.get("x", group, .committed) == 2)
        try alice.send(group, to: carol)
        #expect(try carol.get("x", group, .committed) == 2, "carol held `one`; the envelope for `two` swaps them")
        #expect(try carol.hashes(group).committed == alice.hashes(group).committed)
        #expect(try carol.replica.ingest(receipts: [one, two]).duplicates == 2)
    }

    @Test func deadLetterAfterTheRetryLimit() throws {
        var limits = ReplicaLimits()
        limits.maxPendingRetries = 3
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob", limits: limits)
        let group = try alice.replica.createGroup(name: "g")
        let orphan = try handmade(alice.device, group: group, counter: 9, op: .entityPut(key: "z", value: 1))
        let first = try bob.replica.ingest(receipts: [orphan])
        #expect(first.queued == 1)
        #expect(first.actions == [.requestAuthorCounters(group: group, author: alice.device.device, from: 1, to: 8)])
        for _ in 0..<2 { _ = try bob.replica.retryPending() }
        #expect(try bob.replica.deadLetters().isEmpty)
        let last = try bob.replica.retryPending()
        let dead = try bob.replica.deadLetters()
        #expect(dead.count == 1 && dead[0].cid == orphan.cid && dead[0].reason.contains("gave up after 3 retries"))
        #expect(last.events.contains(.deadLettered(kind: .receipt, cid: orphan.cid, reason: dead[0].reason)))
        #expect(try bob.replica.pending().isEmpty)
    }

    @Test func deadLetterAfterTheAgeLimit() throws {
        let bob = try TestReplica("bob")
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        _ = try bob.replica.ingest(receipts: [
            try handmade(alice.device, group: group, counter: 5, op: .entityPut(key: "z", value: 1))
        ])
        bob.clock.advance(bob.replica.limits.maxPendingAgeMillis - 1)
        _ = try bob.replica.retryPending()
        #expect(try bob.replica.deadLetters().isEmpty)
        bob.clock.advance(1)
        _ = try bob.replica.retryPending()
        #expect(try bob.replica.deadLetters().first?.reason.contains("gave up after waiting") == true)
    }

    /// A buggy (or malicious) sequencer commits a receipt the rules forbid: every replica records
    /// it as rejected, with the same reason, and none applies it.
    @Test func unauthorizedCommittedReceiptIsRejectedIdenticallyEverywhere() throws {
        let alice = try TestReplica("alice")
        let mallory = try TestReplica("mallory")
        let r1 = try TestReplica("r1")
        let r2 = try TestReplica("r2")
        let group = try alice.replica.createGroup(name: "g")
        let forged = try handmade(
            mallory.device, group: group, counter: 1, op: .entityPut(key: "owned", value: "yes"), hlc: 5)
        let envelope = try Envelope.sign(
            group: group, seq: 2, receipt: forged.cid, term: 0, receivedAt: 9, key: alice.device.signingKey)
        let h = try alice.holdings(group)
        _ = try r1.replica.ingest(receipts: h.receipts + [forged], envelopes: h.envelopes + [envelope])
        _ = try r2.replica.ingest(receipts: [forged], envelopes: [envelope])
        _ = try r2.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)
        for r in [r1, r2] {
            let log = try r.replica.log(of: group, view: .committed)
            #expect(log.count == 2)
            #expect(log[1].rejected == "sender is not an active member")
            #expect(try r.get("owned", group) == nil)
        }
        #expect(try r1.hashes(group) == r2.hashes(group))
        // The real sequencer refuses it instead of sequencing it.
        let refusal = try alice.replica.ingest(receipts: [forged])
        #expect(
            refusal.events.contains(.refused(group: group, cid: forged.cid, reason: "sender is not an active member")))
        #expect(try alice.replica.vector(of: group).committed == 1)
    }

    @Test func removedMembersLaterReceiptsAreRejected() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob, carol])
        try bob.replica.append(.entityPut(key: "b", value: 1), to: group)
        try bob.send(group, to: alice)
        #expect(try alice.get("b", group, .committed) == 1)
        try alice.replica.append(.memberRemoved(identity: bob.identity), to: group)
        let after = try bob.replica.append(.entityPut(key: "b", value: 2), to: group)  // bob has not heard yet
        let report = try alice.replica.ingest(receipts: [after.receipt])
        #expect(
            report.events.contains { if case .refused(_, let cid, _) = $0 { cid == after.receipt.cid } else { false } })
        #expect(try alice.get("b", group, .committed) == 1)
        // Committed anyway by a forged envelope: rejected identically on every replica.
        let seq = try alice.replica.vector(of: group).committed + 1
        let forced = try Envelope.sign(
            group: group, seq: seq, receipt: after.receipt.cid, term: 0, receivedAt: 1, key: alice.device.signingKey)
        try alice.send(group, to: carol)
        for node in [alice, carol] {
            _ = try node.replica.ingest(receipts: [after.receipt], envelopes: [forced])
            #expect(
                try node.replica.log(of: group, view: .committed).last?.rejected == "sender is not an active member")
            #expect(try node.get("b", group, .committed) == 1)
        }
        #expect(try alice.hashes(group).committed == carol.hashes(group).committed)
    }

    @Test func envelopesFromAnyoneButTheAuthorityAreRefused() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let eve = try TestReplica("eve")
        let group = try alice.replica.createGroup(name: "g")
        let put = try alice.replica.append(.entityPut(key: "k", value: 1), to: group)
        let h = try alice.holdings(group)
        let fake = try Envelope.sign(
            group: group, seq: 2, receipt: put.receipt.cid, term: 0, receivedAt: 1, key: eve.device.signingKey)
        let report = try bob.replica.ingest(receipts: h.receipts, envelopes: [h.envelopes[0], fake])
        #expect(report.rejected.contains { $0.reason.contains("group's sequencer is the device") })
        #expect(try bob.replica.vector(of: group).committed == 1)
        #expect(try bob.replica.deadLetters().count == 1)
        // seq 1 must be the group.created, sequenced by its author.
        let carol = try TestReplica("carol")
        let wrongFirst = try Envelope.sign(
            group: group, seq: 1, receipt: h.receipts[0].cid, term: 0, receivedAt: 1, key: eve.device.signingKey)
        #expect(
            try carol.replica.ingest(receipts: h.receipts, envelopes: [wrongFirst]).rejected.contains {
                $0.reason.contains("creating device")
            })
        // A forged signature is refused before anything else.
        var sig = h.envelopes[1].signature
        sig[0] ^= 1
        #expect(
            try carol.replica.ingest(
                receipts: [], envelopes: [try Envelope(payload: h.envelopes[1].payload, signature: sig)]
            ).rejected.count == 1)
    }

    @Test func invalidReceiptsAreRejectedWithAReasonAndRemembered() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        let good = try alice.holdings(group).receipts[0]
        var sig = good.signature
        sig[3] ^= 1
        let bad = try Receipt(payload: good.payload, signature: sig, certificate: good.certificate)
        let report = try bob.replica.ingest(receipts: [bad])
        #expect(report.rejected.first?.reason.contains("signature does not verify") == true)
        #expect(try bob.replica.store.read { try $0.processedOutcome(bad.cid) } == .invalid)
        // The CID hashes the payload only: the same forgery is checked (and refused) again, and
        // the genuine receipt with that payload is taken afterwards, not locked out as a duplicate.
        let again = try bob.replica.ingest(receipts: [bad])
        #expect(again.duplicates == 0 && again.invalid == [bad.cid])
        let genuine = try bob.replica.ingest(receipts: [good])
        #expect(genuine.stored == 1 && genuine.duplicates == 0)
        #expect(try bob.replica.ingest(receipts: [good]).duplicates == 1)
        #expect(try bob.replica.invalidReceipts().map(\.cid) == [bad.cid], "the forgery stays listed as evidence")
    }

    /// The one-statement replay check answers for every place a CID can be: held, pending,
    /// finished (known unless the outcome was `invalid`), nowhere; a stored outcome it cannot
    /// read is an error, not a guess.
    @Test func aKnownReceiptIsHeldPendingOrFinishedButNotInvalid() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<3 { try alice.replica.append(.entityPut(key: "k", value: .int(Int64(i))), to: group) }
        let h = try alice.holdings(group).receipts
        let (first, waiting, never) = (h[0], h[3], h[2])
        var sig = h[1].signature
        sig[0] ^= 1
        let forged = try Receipt(payload: h[1].payload, signature: sig, certificate: h[1].certificate)
        _ = try bob.replica.ingest(receipts: [first, waiting, forged])
        let known = { (cid: CID) in try bob.replica.store.read { try $0.isKnownReceipt(cid) } }
        #expect(try known(first.cid), "held")
        #expect(try known(waiting.cid), "pending (counter 4 waits for 2 and 3)")
        #expect(try !known(forged.cid), "invalid: checked again")
        #expect(try !known(never.cid), "never seen")
        let hex = TestSupport.hex(never.cid.bytes)
        try bob.replica.store.write { db in
            try db.execute(
                rawSQL:
                    "INSERT INTO processed_receipts (cid, group_id, outcome, reason, processed_at) VALUES (x'\(hex)', x'\(hex)', 'ignored', 'test', 1)"
            )
        }
        #expect(try known(never.cid), "finished as ignored")
        try bob.replica.store.write { db in
            try db.execute(rawSQL: "UPDATE processed_receipts SET outcome = 'mislaid' WHERE outcome = 'ignored'")
        }
        #expect(throws: StoreError.self) { try known(never.cid) }
    }

    @Test func applicationReceiptsReachSubscribersInCommittedOrder() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<5 {
            try alice.replica.append(.application(type: "app.chat", body: .textMap(["n": .int(Int64(i))])), to: group)
        }
        let got = Mutex<[Int64]>([])
        bob.replica.subscribe { e in
            if case .application(_, _, let r) = e { got.withLock { $0.append(r.body["n"]!.int64Value!) } }
        }
        let h = try alice.holdings(group)
        _ = try bob.replica.ingest(receipts: h.receipts.shuffled(), envelopes: h.envelopes.shuffled())
        #expect(got.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    @Test func reorderingIsAnnounced() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob, carol])
        try alice.send(group, to: carol)
        try bob.send(group, to: carol)
        // Carol guesses bob's write (older HLC) comes before her own; the sequencer sees hers first.
        let bobs = try bob.replica.append(.entityPut(key: "k", value: "bob"), to: group)
        carol.clock.advance(60_000)
        let carols = try carol.replica.append(.entityPut(key: "k", value: "carol"), to: group)
        _ = try carol.replica.ingest(receipts: [bobs.receipt])
        #expect(try carol.get("k", group) == "carol", "tentatively: HLC order, carol's is later")
        _ = try alice.replica.ingest(receipts: [carols.receipt])
        _ = try alice.replica.ingest(receipts: [bobs.receipt])
        let report = try alice.send(group, to: carol)
        #expect(
            report.events.contains(
                .reordered(
                    group: group, seq: try alice.replica.vector(of: group).committed - 1, expected: bobs.receipt.cid,
                    committed: carols.receipt.cid)))
        #expect(try carol.get("k", group, .committed) == "bob", "committed order decides: bob's came last")
    }

    @Test func localWritesThatTheRulesForbidAreRefusedAndWriteNothing() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        try alice.send(group, to: bob)
        let before = try bob.hashes(group)
        let logged = try bob.replica.changeLogBounds().last
        #expect(throws: ReplicaError(.notAMember, "sender is not an active member")) {
            try bob.replica.append(.entityPut(key: "k", value: 1), to: group)
        }
        #expect(throws: ReplicaError(.notAMember, "")) { try bob.replica.append(.renamed(name: "mine"), to: group) }
        #expect(try bob.hashes(group) == before)
        #expect(try bob.replica.changeLogBounds().last == logged, "a refused write logs no change")
    }

    @Test func memberLimitIsEnforcedAtTheBoundary() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g", maxMembers: 3)
        for i in 0..<2 {
            try alice.replica.append(
                .memberAdded(identity: try TestReplica("x\(i)").identity, role: .member), to: group)
        }
        #expect(throws: ReplicaError(.groupFull, "")) {
            try alice.replica.append(.memberAdded(identity: try TestReplica("y").identity, role: .member), to: group)
        }
        #expect(try alice.replica.state(of: group, view: .committed)?.occupiedSeats == 3)
    }

    @Test func exportImportIsLosslessAndIdempotent() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob])
        try bob.replica.append(.entityPut(key: "tentative", value: 1), to: group)
        try alice.replica.append(.entityPut(key: "committed", value: 2), to: group)
        try bob.send(group, to: carol)
        var lines = [String]()
        try alice.replica.export(group: group) { lines.append($0) }
        _ = try carol.replica.importExport(lines: lines)
        #expect(try carol.hashes(group).committed == alice.hashes(group).committed)
        let second = try carol.replica.importExport(lines: lines)
        #expect(second.stored == 0 && second.committed == 0 && second.duplicates == lines.count - 1)
        #expect(throws: ReplicaError(.invalidImport, "")) {
            try carol.replica.importExport(lines: [lines[0], "{not json"])
        }
        #expect(throws: ReplicaError(.invalidImport, "")) {
            try carol.replica.importExport(lines: ["{\"format\":\"other\"}"])
        }
    }
}

struct RetryCountingTests {
    /// Retries count time-driven passes (`retryPending`), not how often unrelated traffic for the
    /// group happened to arrive while an item waited: that would dead-letter healthy items on busy groups.
    @Test func unrelatedTrafficDoesNotUseUpRetries() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [carol])
        let waiting = try alice.replica.append(.entityPut(key: "w", value: 1), to: group)
        let committed = try alice.holdings(group)
        // Carol keeps writing after her last sync: tentative traffic for the same group.
        let chatter = try (0..<(bob.replica.limits.maxPendingRetries + 5)).map { i in
            try carol.replica.append(.entityPut(key: "c\(i)", value: 1), to: group).receipt
        }
        // Bob gets everything committed except the receipt of the last envelope…
        _ = try bob.replica.ingest(
            receipts: committed.receipts.filter { $0.cid != waiting.receipt.cid }, envelopes: committed.envelopes)
        #expect(try bob.replica.vector(of: group).committed == committed.envelopes.count - 1)
        // …then carol's chatter, one receipt at a time, while that envelope waits.
        for r in chatter { _ = try bob.replica.ingest(receipts: [r]) }
        _ = try bob.replica.retryPending()
        #expect(try bob.replica.deadLetters().isEmpty)
        _ = try bob.replica.ingest(receipts: [waiting.receipt])
        #expect(try bob.replica.vector(of: group).committed == committed.envelopes.count)
        #expect(try bob.hashes(group).committed == alice.hashes(group).committed)
    }
}

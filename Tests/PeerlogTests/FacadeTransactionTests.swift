import Foundation
import Peerlog
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Writes decided at the committed order through the facade (docs/PROTOCOL.md §9.7): the
/// transaction builder, awaited outcomes (also after a restart), and the change stream's
/// `.rejected` for a write rejected at commit.
@Suite struct FacadeTransactionTests {
    /// The README's booking example, run: the first booking stands, the second is told why,
    /// and the stream reports the rejection with the same reason.
    @Test func theReadmesBookingRunsAndTheSecondIsRejected() async throws {
        let peerlog = try await Peerlog.temporary()
        let group = try await peerlog.createGroup(named: "rooms", encrypted: false)
        let seen = Collector(peerlog.changes(in: group, after: try await peerlog.latestChangeCursor()))
        var outcomes = [PeerlogOutcome]()
        for _ in 0..<2 {
            var booking = PeerlogTransaction()
            booking.require("slot/9", .absent)  // or .version(entry.cid), .value(...)
            try booking.put("slot/9", "ann")
            booking.add("bookings", 1)  // a counter: concurrent adds all count
            let write = try await peerlog.write(booking, in: group)
            outcomes.append(try await peerlog.finalOutcome(of: write))
        }
        guard case .committed = outcomes[0], case .rejected(_, let reason) = outcomes[1] else {
            Issue.record("outcomes: \(outcomes)")
            return
        }
        #expect(reason == "condition 1 failed: \"slot/9\" holds a value")
        #expect(try await peerlog.get("bookings", as: Int.self, in: group) == 1)
        #expect(
            await seen.wait {
                $0.contains { if case .rejected(_, _, let r) = $0.event { r == reason } else { false } }
            })
    }

    @Test func mergingKindsAndConditionsThroughTheBuilder() async throws {
        let peerlog = try await Peerlog.temporary()
        let group = try await peerlog.createGroup(named: "board", encrypted: true)
        var t = PeerlogTransaction()
        try t.insert(["b", "a"], into: "tags")
        try t.setFields(["title": "plan"], of: "card")
        t.add("n", 5)
        try await peerlog.write(t, in: group)
        try await peerlog.add(-2, to: "n", in: group)
        var more = PeerlogTransaction()
        try more.remove(["b"], from: "tags")
        more.removeFields(["missing"], of: "card")
        try more.setFields(["done": true], of: "card")
        try await peerlog.write(more, in: group)
        #expect(try await peerlog.get("tags", as: [String].self, in: group) == ["a"])
        #expect(try await peerlog.get("n", as: Int.self, in: group) == 3)
        struct Card: Codable, Equatable {
            var title: String
            var done: Bool
        }
        #expect(try await peerlog.get("card", as: Card.self, in: group) == Card(title: "plan", done: true))
        // A version condition: with the version read it applies, after another write it does not.
        let entry = try #require(try await peerlog.entry("n", in: group))
        let applies = try await peerlog.put("n", 10, in: group, if: .version(entry.cid))
        #expect(try await peerlog.outcome(of: applies) == .committed(seq: try #require(applies.seq)))
        let stale = try await peerlog.delete("n", in: group, if: .version(entry.cid))
        guard case .rejected = try await peerlog.outcome(of: stale) else {
            Issue.record("a stale version applied")
            return
        }
        #expect(try await peerlog.get("n", as: Int.self, in: group) == 10)
        // An empty transaction is refused at once; nothing is written.
        await #expect(throws: PeerlogError.self) { try await peerlog.write(PeerlogTransaction(), in: group) }
    }

    /// An outcome is kept: a restart reads it again; an unknown receipt is `receiptNotFound`.
    @Test func outcomesSurviveARestart() async throws {
        let home = try TestSupport.temporaryDirectory()
        let write: PeerlogWrite
        do {
            let peerlog = try await Peerlog.open(home: home, deviceName: "keeps")
            let group = try await peerlog.createGroup(named: "g", encrypted: false)
            try await peerlog.put("k", 1, in: group)
            write = try await peerlog.put("k", 2, in: group, if: .absent)
        }
        let reopened = try await Peerlog.open(home: home, deviceName: "keeps")
        guard case .rejected(_, let reason) = try await reopened.currentOutcome(of: write.cid) else {
            Issue.record("the outcome was not kept")
            return
        }
        #expect(reason.hasPrefix("condition 1 failed"))
        let unknown = CID(hashing: Array("nothing".utf8))
        do {
            _ = try await reopened.currentOutcome(of: unknown)
            Issue.record("an unknown receipt has an outcome")
        } catch let e as PeerlogError {
            #expect(e.code == .receiptNotFound)
        }
    }

    /// A write no sequencer orders stays pending: `finalOutcome(timeout:)` gives up with nil,
    /// and the outcome now is the tentative view's guess.
    @Test func aPendingWriteTimesOut() async throws {
        let peerlog = try await Peerlog.temporary()
        let group = try await peerlog.createGroup(named: "away", encrypted: false)
        let elsewhere = try LocalDevice.deterministic(seed: Array("elsewhere".utf8), name: "elsewhere", createdAt: 1)
        try await peerlog.setSequencer(of: group, to: .solo(elsewhere.device))
        try await peerlog.put("k", 1, in: group)
        let claim = try await peerlog.put("k", 2, in: group, if: .absent)
        #expect(try await peerlog.finalOutcome(of: claim.cid, timeout: .milliseconds(300)) == nil)
        #expect(try await peerlog.outcome(of: claim) == .pending(guess: "condition 1 failed: \"k\" holds a value"))
        let free = try await peerlog.put("other", 2, in: group, if: .absent)
        #expect(try await peerlog.outcome(of: free) == .pending(guess: nil))
    }
}

import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// `Replica.statusFacts(of:reusing:)`: a status's store part, its folds reused where the caller
/// kept them and its counts always read afresh.
struct StatusFactsTests {
    @Test func keptFoldsAreReusedAndCountsReadAfresh() throws {
        let alice = try TestReplica("alice")
        let (kept, folded) = try (alice.replica.createGroup(name: "kept"), alice.replica.createGroup(name: "folded"))
        let first = try alice.replica.statusFacts(of: [kept, folded])
        #expect(first.map(\.folded.name) == ["kept", "folded"])
        #expect(first.allSatisfy { $0.folded.authority != nil })

        try alice.replica.append(.renamed(name: "renamed"), to: kept)
        try alice.replica.append(.renamed(name: "renamed too"), to: folded)
        _ = try alice.replica.append(.entityPut(key: "k", value: 1), to: kept)
        let second = try alice.replica.statusFacts(of: [kept, folded], reusing: [kept: first[0].folded])
        // The kept part is taken as it was (the caller vouched for it); the other is folded anew.
        #expect(second.map(\.folded.name) == ["kept", "renamed too"])
        // The counts are the store's now: two more receipts, committed by the solo sequencer.
        #expect(second[0].committedSeq == first[0].committedSeq + 2)
        #expect(second[1].committedSeq == first[1].committedSeq + 1)
    }
}

import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Receipts joining the tentative view in one batch are each folded over the state of the last
/// accepted group operation before them (a checkpoint), which the view decodes once per
/// checkpoint, not once per receipt.
struct OverlayCheckpointTests {
    /// Alice invites bob (bob pending: checkpoint 1), bob accepts (checkpoint 2); then one
    /// batch brings alice's write between the two and bob's write after both. Bob's write is
    /// accepted only if it is folded over the second checkpoint, not the first one decoded for
    /// alice's write.
    @Test func aBatchSpanningTwoCheckpointsFoldsEachReceiptOverItsOwn() throws {
        let alice = try TestReplica("alice", seed: 41)
        let bob = try TestReplica("bob", seed: 41)
        let observer = try TestReplica("observer", seed: 41)
        let relay = try LocalDevice.deterministic(seed: Array("relay/41".utf8), name: "relay", createdAt: 1)
        let group = try groupWith(owner: alice, members: [])
        // From here on nothing commits: every later receipt stays in the tentative view.
        try alice.replica.append(.sequencerChanged(.relay(key: relay.device, address: "127.0.0.1:9")), to: group)
        try alice.send(group, to: observer)

        alice.clock.advance(100)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        bob.clock.advance(200)
        try bob.replica.append(.inviteAccepted, to: group)
        alice.clock.advance(50)
        try alice.put(group, "from-alice", 1)  // between the two checkpoints
        bob.clock.advance(50)
        try bob.put(group, "from-bob", 2)  // after both

        let a = try alice.holdings(group).receipts
        let b = try bob.holdings(group).receipts
        func receipt(_ r: [Receipt], _ type: String) throws -> Receipt { try #require(r.last { $0.type == type }) }
        let invite = try receipt(a, "group.member_added")
        let accept = try receipt(b, "group.invite_accepted")
        let alicesWrite = try receipt(a, "entity.put")
        let bobsWrite = try receipt(b, "entity.put")
        #expect(invite.hlc < alicesWrite.hlc && alicesWrite.hlc < accept.hlc && accept.hlc < bobsWrite.hlc)

        _ = try observer.replica.ingest(receipts: [invite])
        _ = try observer.replica.ingest(receipts: [accept])
        let report = try observer.replica.ingest(receipts: [alicesWrite, bobsWrite])
        #expect(report.stored == 2, "\(report)")
        #expect(try observer.get("from-alice", group) == .int(1))
        #expect(try observer.get("from-bob", group) == .int(2), "bob's write was folded over the invitation's state")
        #expect(try observer.replica.checkTentativeOverlay(of: group) == .matches)
    }
}

import Peerlog
import PeerlogTestSupport
import Testing

/// An app meets the offline limits (docs/PROTOCOL.md §10.5) as one code, `offlineLimit`, and
/// reads the headroom before it gets there.
@Suite struct FacadeOfflineLimitsTests {
    @Test func aWritePastTheLimitFailsWithItsCodeAndTheHeadroomSaysSo() async throws {
        let alice = try await Peerlog.temporary(deviceName: "alice")
        let relay = try await Peerlog.temporary(deviceName: "relay")
        let group = try await alice.createGroup(named: "offline", encrypted: false)
        // A relay nobody reaches orders the group: Alice's writes wait for a seq.
        try await alice.setSequencer(of: group, to: .relay(key: relay.deviceID, address: "127.0.0.1:9"))
        let defaults = try await alice.offlineHeadroom(of: group)
        #expect(defaults.limits.maxWaiting == 100_000 && defaults.limits.maxAgeMillis == 30 * 86_400_000)
        #expect(defaults.waiting == 0 && defaults.oldestAgeMillis == nil)

        try await alice.setOfflineLimits(maxWaiting: 2, maxAgeMillis: nil, of: group)
        #expect(try await alice.put("a", "1", in: group).isTentative)
        try await alice.delete("a", in: group)
        let full = try await alice.offlineHeadroom(of: group)
        #expect(full.waiting == 2 && full.remaining == 0 && full.oldestAgeMillis != nil)
        var refused: PeerlogError?
        do { try await alice.put("b", "2", in: group) } catch let e as PeerlogError { refused = e }
        #expect(refused?.code == .offlineLimit, "\(String(describing: refused))")
        #expect(refused?.description.contains("maxWaitingLocalWrites") == true)
        var batch: PeerlogError?
        do { try await alice.putBatch([.put(key: "c", value: .int(3))], in: group) } catch let e as PeerlogError {
            batch = e
        }
        #expect(batch?.code == .offlineLimit && batch?.batchEntry == nil, "\(String(describing: batch))")
        #expect(try await alice.progress(of: group).tentativeCount == 2, "nothing more was written")
        // A group operation stays possible at the limit (within the reserve).
        try await alice.rename(group, to: "still offline")
    }
}

import PeerlogCrypto
import PeerlogModel
import Testing

struct HLCTests {
    @Test func monotonicEvenWhenWallClockGoesBack() {
        var clock = HybridLogicalClock()
        let a = clock.now(wallMillis: 1000)
        let b = clock.now(wallMillis: 1000)
        let c = clock.now(wallMillis: 900)
        let d = clock.now(wallMillis: 2000)
        #expect(a < b && b < c && c < d)
        #expect(a == HLCTimestamp(physical: 1000, logical: 0) && c == HLCTimestamp(physical: 1000, logical: 2))
        #expect(d == HLCTimestamp(physical: 2000, logical: 0))
    }

    @Test func observeAdoptsLaterRemoteTimeWithinDrift() {
        var clock = HybridLogicalClock()
        clock.observe(HLCTimestamp(physical: 5000, logical: 3), wallMillis: 4000)
        #expect(clock.now(wallMillis: 4000) == HLCTimestamp(physical: 5000, logical: 4))
        // A clock far in the future is not adopted.
        clock.observe(
            HLCTimestamp(physical: 4000 + HybridLogicalClock.maxForwardDrift + 1, logical: 0), wallMillis: 4000)
        #expect(clock.now(wallMillis: 4000) == HLCTimestamp(physical: 5000, logical: 5))
        clock.observe(HLCTimestamp(physical: 4000 + HybridLogicalClock.maxForwardDrift, logical: 0), wallMillis: 4000)
        #expect(
            clock.now(wallMillis: 4000) == HLCTimestamp(physical: 4000 + HybridLogicalClock.maxForwardDrift, logical: 1)
        )
    }

    @Test func logicalOverflowMovesToNextMillisecond() {
        var clock = HybridLogicalClock(last: HLCTimestamp(physical: 10, logical: .max))
        #expect(clock.now(wallMillis: 10) == HLCTimestamp(physical: 11, logical: 0))
    }

    @Test func packing() {
        let t = HLCTimestamp(physical: HLCTimestamp.maxPhysical, logical: 0xabcd)
        #expect(HLCTimestamp(packed: t.packed) == t)
        #expect(t.packed == UInt64.max & ~0xffff | 0xabcd)
    }
}

struct SafetyNumberTests {
    @Test func sameOnBothSidesAndPinned() throws {
        let a = GoldenFixture.certificate.identity
        let b = IdentityID(publicKey: GoldenFixture.deviceKey.publicKey)
        #expect(SafetyNumber(a, b) == SafetyNumber(b, a))
        #expect(
            SafetyNumber(a, b).description == "58078 47052 05680 90928 29663 14638 60690 95791 01620 65065 86718 58100")
        #expect(SafetyNumber(a, b).groups.allSatisfy { $0.count == 5 && $0.allSatisfy(\.isNumber) })
        let c = IdentityID(publicKey: Ed25519.PrivateKey().publicKey)
        #expect(SafetyNumber(a, c) != SafetyNumber(a, b))
    }
}

import PeerlogPairing
import Testing

/// The preamble a guest sends first (docs/PROTOCOL.md §20.9), and what a connection costs an
/// offer: nothing until the guest's share.
struct PairingPreambleTests {
    @Test func aPreambleNamesItsNameplateAndNothingElseParses() throws {
        let bytes = PairingPreamble.bytes(nameplate: 640)
        #expect(bytes == Array("PLPAIR".utf8) + [0, 1, 0x02, 0x80])
        #expect(try PairingPreamble.nameplate(bytes) == 640)
        #expect(PairingPreamble.firstByte == 0x50)
        // A Noise handshake's first frame starts with the high byte of a length of at most 608.
        #expect(PairingPreamble.firstByte > UInt8(608 >> 8))
        for bad in [
            Array("PLPAIR".utf8) + [0, 2, 0, 7], Array("PLPAIX".utf8) + [0, 1, 0, 7],
            Array("PLPAIR".utf8) + [0, 1, 0, 0], Array("PLPAIR".utf8) + [0, 1, 0x03, 0xe8], Array(bytes.prefix(9)),
        ] {
            #expect(throws: PairingError(.malformed)) { try PairingPreamble.nameplate(bad) }
        }
    }

    @Test func openingAnExchangeIsFreeAndEachShareSpendsOneAttempt() throws {
        var offer = PairingOffer(code: .generate(nameplate: 7), purpose: .link, expiresAt: 100)
        for _ in 0..<50 { _ = try offer.openExchange(now: 0).get() }
        #expect(offer.attemptsLeft == 3, "opening exchanges spent attempts")
        #expect(offer.spendAttempt(now: 0) == nil)
        #expect(offer.spendAttempt(now: 0) == nil)
        #expect(offer.spendAttempt(now: 0) == nil)
        #expect(offer.attemptsLeft == 0)
        #expect(offer.spendAttempt(now: 0) == PairingError(.exhausted))
        #expect(throws: PairingError(.exhausted)) { try offer.openExchange(now: 0).get() }
        var late = PairingOffer(code: .generate(nameplate: 8), purpose: .link, expiresAt: 100)
        #expect(late.spendAttempt(now: 100) == PairingError(.expired))
        #expect(late.attemptsLeft == 3)
        late.markUsed()
        #expect(late.refusal(now: 0) == PairingError(.used))
    }
}

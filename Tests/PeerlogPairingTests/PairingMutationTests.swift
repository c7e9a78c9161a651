import PeerlogCrypto
import PeerlogPairing
import PeerlogTestSupport
import Testing

/// Every message of a real exchange, mutated (bit flips, truncations, extensions), fed to the machine
/// that expects it: each one fails cleanly or, when the mutation left the message meaningfully intact,
/// is accepted; never a crash, never a payload from a forged confirmation.
struct PairingMutationTests {
    static let seed: UInt64 = 0x5eed_0016

    static func mutate(_ message: [UInt8], _ rng: inout SeededRandom) -> [UInt8] {
        var m = message
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            let i = Int.random(in: 0..<m.count, using: &rng)
            m[i] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
        case 1: m = Array(m.prefix(Int.random(in: 0..<m.count, using: &rng)))
        case 2: m += rng.bytes(Int.random(in: 1...4, using: &rng))
        default:
            let i = Int.random(in: 0..<m.count, using: &rng)
            m[i] = UInt8.random(in: 0...255, using: &rng)
        }
        return m
    }

    @Test func mutatedMessagesFailCleanly() throws {
        var rng = SeededRandom(seed: Self.seed)
        for round in 0..<200 {
            var offer = PairingOffer(code: .generate(nameplate: 1 + round % 999), purpose: .link, expiresAt: 1)
            var host = try offer.beginExchange(now: 0).get()
            var guest = PairingGuestExchange(code: offer.code, purpose: .link)
            let stage = round % 4
            if stage == 0 {
                let mutated = Self.mutate(host.opening, &rng)
                _ = guest.receive(mutated)  // A flipped sid or commit is still a valid pair_open.
                continue
            }
            let start = try #require(guest.receive(host.opening).sent)
            if stage == 1 {
                let step = host.receive(Self.mutate(start, &rng))
                #expect(step.payload == nil, "seed \(Self.seed) round \(round)")
                continue
            }
            let reply = try #require(host.receive(start).sent)
            if stage == 2 {
                // A byte replaced by itself is no change (the exchanges' own randomness decides the bytes).
                let mutated = Self.mutate(reply, &rng)
                let step = guest.receive(mutated)
                if mutated != reply {
                    #expect(step.error != nil, "any change to yb or confirm fails; seed \(Self.seed) round \(round)")
                }
                continue
            }
            #expect(guest.receive(reply).isReady)
            let confirm = try guest.send(guestPayload: [7])
            let mutated = Self.mutate(confirm, &rng)
            let step = host.receive(mutated)
            if mutated != confirm { #expect(step.error != nil, "seed \(Self.seed) round \(round)") }
        }
    }
}

import PeerlogCrypto
import PeerlogEncoding
import PeerlogPairing
import Testing

/// The host and guest machines driven into each other, bytes passed by hand (no sockets).
struct PairingExchangeTests {
    static let expiry: UInt64 = 1_000_000

    static func offer(_ purpose: PairingPurpose = .link, nameplate: Int = 7) -> PairingOffer {
        PairingOffer(code: .generate(nameplate: nameplate), purpose: purpose, expiresAt: expiry)
    }

    /// A code with the same nameplate and another secret.
    static func wrongCode(for code: PairingCode) throws -> PairingCode {
        let text = code.description
        let last = text.last!.wholeNumberValue!
        return try PairingCode(parsing: String(text.dropLast()) + String((last + 1) % 10))
    }

    @Test func fullExchangeDeliversBothPayloads() throws {
        var offer = Self.offer()
        var h = try Handshake.run(offer: &offer, guestCode: offer.code)
        #expect(offer.attemptsLeft == 2)
        #expect(h.guestStep.isReady)
        #expect(h.host.transcriptHash?.count == 32)
        #expect(h.host.transcriptHash == h.guest.transcriptHash)
        let confirmation = try #require(h.guest.confirmation)
        #expect(confirmation == h.host.confirmation)
        #expect(confirmation.count == 7 && confirmation.split(separator: " ").map(\.count) == [3, 3])
        let confirm = try h.guest.send(guestPayload: Array("hello host".utf8))
        #expect(h.host.receive(confirm).payload == Array("hello host".utf8))
        let done = try h.host.finish(hostPayload: Array("hello guest".utf8))
        #expect(h.guest.receive(done).hostPayload == Array("hello guest".utf8))
        #expect(!offer.isUsed)
        offer.markUsed()
        #expect(offer.isUsed)
        #expect(offer.state(now: 0) == .used)
        #expect(offer.state(now: Self.expiry) == .used, "used wins over expired")
        #expect(throws: PairingError(.used)) { try offer.beginExchange(now: 0).get() }
        // Nothing more is accepted once over.
        #expect(h.guest.receive(done).error == PairingError(.unexpectedMessage))
        #expect(h.host.receive(confirm).error == PairingError(.unexpectedMessage))
        #expect(throws: PairingError(.unexpectedMessage)) { try h.host.finish(hostPayload: []) }
        #expect(throws: PairingError(.unexpectedMessage)) { try h.guest.send(guestPayload: []) }
    }

    @Test func confirmationsDifferBetweenRuns() throws {
        var offer = Self.offer()
        let a = try Handshake.run(offer: &offer, guestCode: offer.code)
        let b = try Handshake.run(offer: &offer, guestCode: offer.code)
        #expect(a.host.confirmation != nil && a.host.confirmation == a.guest.confirmation)
        #expect(b.host.confirmation != nil && b.host.confirmation == b.guest.confirmation)
        #expect(a.host.transcriptHash != b.host.transcriptHash)
        // 6 digits: two runs agree by chance with probability 10⁻⁶; compare the hashes behind them too.
        #expect(a.host.confirmation != b.host.confirmation)
    }

    @Test func wrongCodeFailsBothSidesAndCostsAnAttempt() throws {
        var offer = Self.offer()
        var h = try Handshake.run(offer: &offer, guestCode: try Self.wrongCode(for: offer.code))
        #expect(h.guestStep.error == PairingError(.wrongCode))
        #expect(h.guest.transcriptHash == nil && h.guest.confirmation == nil)
        let told = try #require(h.guest.failureMessage)
        let hostStep = h.host.receive(told)
        #expect(hostStep.error == PairingError(.wrongCode))
        #expect(hostStep.reply == nil)
        #expect(offer.attemptsLeft == 2)
        #expect(offer.state(now: 0) == .open)
    }

    @Test func thirdFailedAttemptExhaustsTheOffer() throws {
        var offer = Self.offer()
        let wrong = try Self.wrongCode(for: offer.code)
        for left in [2, 1, 0] {
            let h = try Handshake.run(offer: &offer, guestCode: wrong)
            #expect(h.guestStep.error == PairingError(.wrongCode))
            #expect(offer.attemptsLeft == left)
        }
        #expect(offer.state(now: 0) == .exhausted)
        let fourth = offer.beginExchange(now: 0)
        #expect(throws: PairingError(.exhausted)) { try fourth.get() }
        // Even the right code is refused now, and the guest hears why.
        if case .failure(let error) = fourth {
            var guest = PairingGuestExchange(code: offer.code, purpose: .link)
            let step = guest.receive(error.wireMessage)
            #expect(step.error == PairingError(.refused))
            #expect(step.error?.detail.contains("attempts") == true)
        }
    }

    @Test func abandonedExchangeStillCostsAnAttempt() throws {
        var offer = Self.offer()
        for _ in 0..<3 {
            // The guest (right or wrong code) stops after pair_reply: it has seen the host's tag.
            let h = try Handshake.run(offer: &offer, guestCode: offer.code)
            #expect(h.guestStep.isReady)
        }
        #expect(offer.attemptsLeft == 0)
        #expect(throws: PairingError(.exhausted)) { try offer.beginExchange(now: 0).get() }
        // A connection that only received pair_open counts too.
        var other = Self.offer()
        _ = try other.beginExchange(now: 0).get()
        #expect(other.attemptsLeft == 2)
    }

    @Test func expiryBoundary() throws {
        var offer = Self.offer()
        #expect(offer.state(now: Self.expiry - 1) == .open)
        #expect(offer.state(now: Self.expiry) == .expired)
        #expect(throws: PairingError(.expired)) { try offer.beginExchange(now: Self.expiry).get() }
        #expect(offer.attemptsLeft == 3, "a refused exchange costs nothing")
        _ = try offer.beginExchange(now: Self.expiry - 1).get()
        #expect(offer.attemptsLeft == 2)
    }

    @Test func replayedGuestMessagesFailAgainstANewExchange() throws {
        var offer = Self.offer()
        var first = try Handshake.run(offer: &offer, guestCode: offer.code)
        let confirm = try first.guest.send(guestPayload: [1, 2, 3])
        #expect(first.host.receive(confirm).payload == [1, 2, 3])
        // An eavesdropper replays the guest's recorded messages to a new exchange of the same offer.
        var replayed = try offer.beginExchange(now: 0).get()
        #expect(replayed.opening != first.host.opening, "fresh sid and share")
        let reply = replayed.receive(first.start)
        #expect(reply.sent != nil, "the host cannot tell yet")
        #expect(reply.sent != first.reply)
        let step = replayed.receive(confirm)
        #expect(step.error == PairingError(.wrongCode))
        #expect(step.reply != nil)
    }

    @Test func tamperedConfirmOrBoxFails() throws {
        var offer = Self.offer()
        var h = try Handshake.run(offer: &offer, guestCode: offer.code)
        let good = try h.guest.send(guestPayload: [9, 9])
        let map = try CBORDecoder.decodeStrict(good)
        func with(_ key: String, flipped index: Int) -> [UInt8] {
            var bytes = map[key]!.bytesValue!
            bytes[index] ^= 1
            var m = map.mapValue!
            m[.text(key)] = .bytes(bytes)
            return CBOREncoder.encode(.map(m))
        }
        var host2 = h.host
        let badTag = h.host.receive(with("confirm", flipped: 0))
        #expect(badTag.error == PairingError(.wrongCode))
        #expect(badTag.reply != nil)
        let badBox = host2.receive(with("box", flipped: 3))
        #expect(badBox.error == PairingError(.badPayload))

        // The guest's side: a tampered host tag, and a tampered pair_done box.
        var offer2 = Self.offer()
        var host = try offer2.beginExchange(now: 0).get()
        var guest = PairingGuestExchange(code: offer2.code, purpose: .link)
        let start = try #require(guest.receive(host.opening).sent)
        let reply = try #require(host.receive(start).sent)
        var tampered = try CBORDecoder.decodeStrict(reply).mapValue!
        var tag = tampered[.text("confirm")]!.bytesValue!
        tag[31] ^= 0x80
        tampered[.text("confirm")] = .bytes(tag)
        var guestCopy = guest
        #expect(guestCopy.receive(CBOREncoder.encode(.map(tampered))).error == PairingError(.wrongCode))
        #expect(guest.receive(reply).isReady)
        #expect(host.receive(try guest.send(guestPayload: [])).payload == [])
        var done = try CBORDecoder.decodeStrict(try host.finish(hostPayload: [5])).mapValue!
        var box = done[.text("box")]!.bytesValue!
        box[0] ^= 1
        done[.text("box")] = .bytes(box)
        #expect(guest.receive(CBOREncoder.encode(.map(done))).error == PairingError(.badPayload))
    }

    @Test func hostShareMustMatchItsCommitment() throws {
        // A host (or a party in the middle) that changes Yb after pair_open is caught before any key use.
        var offer = Self.offer()
        var hostA = try offer.beginExchange(now: 0).get()
        var hostB = try offer.beginExchange(now: 0).get()
        var guest = PairingGuestExchange(code: offer.code, purpose: .link)
        let start = try #require(guest.receive(hostA.opening).sent)
        _ = try #require(hostA.receive(start).sent)
        var guestB = PairingGuestExchange(code: offer.code, purpose: .link)
        let startB = try #require(guestB.receive(hostB.opening).sent)
        let replyB = try #require(hostB.receive(startB).sent)
        #expect(guest.receive(replyB).error == PairingError(.malformed))
    }

    @Test func malformedAndOversizedMessages() throws {
        let limits = PairingLimits()
        var offer = Self.offer()
        let cases: [[UInt8]] = [
            [],
            [0xff],
            CBOREncoder.encode(.array([])),
            CBOREncoder.encode(.textMap(["t": "pair_start"])),
            CBOREncoder.encode(.textMap(["t": "pair_start", "ya": .bytes([UInt8](repeating: 1, count: 31))])),
            CBOREncoder.encode(.textMap(["t": "pair_start", "ya": .bytes([UInt8](repeating: 1, count: 32)), "x": 1])),
            CBOREncoder.encode(.map([.unsigned(1): "pair_start"])),
            [UInt8](repeating: 0, count: limits.maxMessageBytes + 1),
            // Not deterministic: a 1-byte integer in a 2-byte form.
            [0xa1, 0x61, 0x74, 0x78, 0x0a] + Array("pair_start".utf8),
            // The identity element (32 zero bytes).
            CBOREncoder.encode(.textMap(["t": "pair_start", "ya": .bytes([UInt8](repeating: 0, count: 32))])),
            // A share that is not a ristretto255 encoding.
            CBOREncoder.encode(.textMap(["t": "pair_start", "ya": .bytes([UInt8](repeating: 0xff, count: 32))])),
        ]
        for (index, message) in cases.enumerated() {
            var host = try offer.beginExchange(now: 0).get()
            offer = Self.offer()
            let step = host.receive(message)
            #expect(step.error == PairingError(.malformed), "\(message.prefix(8))")
            #expect(step.reply != nil)
            // The last two are well-formed CBOR, so a guest finds them unexpected rather than malformed.
            guard index < cases.count - 2 else { continue }
            var guest = PairingGuestExchange(code: offer.code, purpose: .link)
            #expect(guest.receive(message).error == PairingError(.malformed))
            #expect(guest.failureMessage != nil)
        }
        // Exactly at the limit is decoded (and refused for what it is, not for its size).
        let pad = limits.maxMessageBytes - CBOREncoder.encode(.textMap(["t": "pair_x", "p": .bytes([])])).count - 2
        let atLimit = CBOREncoder.encode(.textMap(["t": "pair_x", "p": .bytes([UInt8](repeating: 0, count: pad))]))
        #expect(atLimit.count == limits.maxMessageBytes)
        var host = try offer.beginExchange(now: 0).get()
        #expect(host.receive(atLimit).error == PairingError(.unexpectedMessage))
    }

    @Test func messagesOutOfOrderAreUnexpected() throws {
        var offer = Self.offer()
        var h = try Handshake.run(offer: &offer, guestCode: offer.code)
        var host = h.host
        #expect(host.receive(h.start).error == PairingError(.unexpectedMessage), "a second pair_start")
        #expect(throws: PairingError(.unexpectedMessage)) { try h.host.finish(hostPayload: []) }
        var guest = PairingGuestExchange(code: offer.code, purpose: .link)
        #expect(guest.receive(h.reply).error == PairingError(.unexpectedMessage), "pair_reply before pair_open")
        #expect(throws: PairingError(.unexpectedMessage)) { try guest.send(guestPayload: []) }
        _ = try h.guest.send(guestPayload: [])
        #expect(throws: PairingError(.unexpectedMessage)) { try h.guest.send(guestPayload: []) }
    }

    @Test func guestChecksPurposeAndNameplate() throws {
        var offer = Self.offer(.invite, nameplate: 12)
        let host = try offer.beginExchange(now: 0).get()
        var wrongPurpose = PairingGuestExchange(code: offer.code, purpose: .link)
        #expect(wrongPurpose.receive(host.opening).error == PairingError(.unexpectedMessage))
        let other = PairingCode.generate(nameplate: 13)
        var wrongNameplate = PairingGuestExchange(code: other, purpose: .invite)
        #expect(wrongNameplate.receive(host.opening).error == PairingError(.unexpectedMessage))
        var right = PairingGuestExchange(code: offer.code, purpose: .invite)
        #expect(right.receive(host.opening).sent != nil)
    }

    @Test func hostRefusalReachesTheGuestWithItsReason() throws {
        var offer = Self.offer()
        var h = try Handshake.run(offer: &offer, guestCode: offer.code)
        #expect(h.host.receive(try h.guest.send(guestPayload: [1])).payload == [1])
        let refusal = h.host.refuse(reason: "this device is not expected")
        let step = h.guest.receive(refusal)
        #expect(step.error == PairingError(.refused))
        #expect(step.error?.detail == "this device is not expected")
        #expect(h.guest.failureMessage == nil, "nothing to tell a host that refused")
        // Reasons are cut to 1024 bytes.
        var long = try Handshake.run(offer: &offer, guestCode: offer.code)
        let cut = long.host.refuse(reason: String(repeating: "é", count: 600))
        #expect(long.guest.receive(cut).error?.detail.utf8.count == 1024)
    }

    @Test func oversizedPayloadIsRefusedBeforeSending() throws {
        var offer = Self.offer()
        var h = try Handshake.run(offer: &offer, guestCode: offer.code)
        #expect(throws: PairingError(.badPayload)) {
            try h.guest.send(guestPayload: [UInt8](repeating: 0, count: PairingLimits().maxMessageBytes))
        }
        let ok = try h.guest.send(guestPayload: [UInt8](repeating: 0, count: 1000))
        #expect(h.host.receive(ok).payload?.count == 1000)
        #expect(throws: PairingError(.badPayload)) {
            try h.host.finish(hostPayload: [UInt8](repeating: 0, count: PairingLimits().maxMessageBytes))
        }
    }
}

import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogTestSupport
import Testing

@testable import PeerlogPairing

/// The key schedule of docs/PROTOCOL.md §20.3–§20.5 against an independent Python implementation
/// (tools/interop/pair_check.py: hashlib, hmac, `cryptography`), from the messages of real exchanges.
struct PairingInteropTests {
    struct Case: Encodable {
        let isk, open, start, yb, payload, purpose: String
        let nameplate: Int
    }
    struct Result: Decodable, Equatable {
        let ci, commit, th, host_confirm, guest_confirm, guest_box, host_box, confirmation: String
    }

    @Test func keyScheduleMatchesPython() throws {
        var cases: [Case] = []
        var ours: [Result] = []
        for (i, nameplate) in [1, 7, 127, 128, 999].enumerated() {
            let purpose: PairingPurpose = i % 2 == 0 ? .link : .invite
            var offer = PairingOffer(code: .generate(nameplate: nameplate), purpose: purpose, expiresAt: 1)
            let h = try Handshake.run(offer: &offer, guestCode: offer.code)
            let reply = try CBORDecoder.decodeStrict(h.reply)
            let yb = try #require(reply["yb"]?.bytesValue)
            let open = try CBORDecoder.decodeStrict(h.host.opening)
            // Any ISK: the schedule is a function of ISK and the messages.
            let isk = SecureRandom.bytes(64)
            let payload = SecureRandom.bytes(i * 37)
            let th = PairingKeys.transcriptHash(open: h.host.opening, start: h.start, hostShare: yb)
            #expect(th == h.host.transcriptHash, "the machine hashes the messages as sent")
            let keys = PairingKeys(isk: SecureBytes(isk), transcriptHash: th)
            cases.append(
                Case(
                    isk: TestSupport.hex(isk), open: TestSupport.hex(h.host.opening), start: TestSupport.hex(h.start),
                    yb: TestSupport.hex(yb), payload: TestSupport.hex(payload), purpose: purpose.rawValue,
                    nameplate: nameplate))
            ours.append(
                Result(
                    ci: TestSupport.hex(PairingKeys.channelIdentifier(purpose: purpose, nameplate: nameplate)),
                    commit: TestSupport.hex(try #require(open["commit"]?.bytesValue)),
                    th: TestSupport.hex(th), host_confirm: TestSupport.hex(keys.hostConfirm),
                    guest_confirm: TestSupport.hex(keys.guestConfirm),
                    guest_box: TestSupport.hex(keys.seal(payload, key: keys.guestBox)),
                    host_box: TestSupport.hex(keys.seal(payload, key: keys.hostBox)), confirmation: keys.confirmation))
        }
        let input = String(decoding: try JSONEncoder().encode(cases), as: UTF8.self)
        let theirs = try JSONDecoder().decode(
            [Result].self, from: Data(try TestSupport.python("pair_check.py", input: input).utf8))
        #expect(theirs == ours)
    }
}

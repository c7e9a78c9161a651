import PeerlogPairing

extension PairingHostExchange.HostStep {
    var sent: [UInt8]? { if case .send(let b) = self { b } else { nil } }
    var payload: [UInt8]? { if case .guestPayload(let b) = self { b } else { nil } }
    var error: PairingError? { if case .failed(let e, _) = self { e } else { nil } }
    var reply: [UInt8]? { if case .failed(_, let r) = self { r } else { nil } }
}

extension PairingGuestExchange.GuestStep {
    var sent: [UInt8]? { if case .send(let b) = self { b } else { nil } }
    var isReady: Bool { if case .readyForPayload = self { true } else { false } }
    var hostPayload: [UInt8]? { if case .done(let b) = self { b } else { nil } }
    var error: PairingError? { if case .failed(let e) = self { e } else { nil } }
}

/// The messages of one exchange driven up to the guest's `readyForPayload` (or its failure).
struct Handshake {
    var host: PairingHostExchange
    var guest: PairingGuestExchange
    var start: [UInt8]
    var reply: [UInt8]
    var guestStep: PairingGuestExchange.GuestStep

    /// Starts an exchange on `offer` and runs a guest holding `guestCode` through open, start and reply.
    static func run(
        offer: inout PairingOffer, guestCode: PairingCode, purpose: PairingPurpose? = nil, now: UInt64 = 0
    ) throws -> Handshake {
        var host = try offer.beginExchange(now: now).get()
        var guest = PairingGuestExchange(code: guestCode, purpose: purpose ?? offer.purpose)
        guard let start = guest.receive(host.opening).sent else { throw PairingError(.unexpectedMessage, "no start") }
        guard let reply = host.receive(start).sent else { throw PairingError(.unexpectedMessage, "no reply") }
        let step = guest.receive(reply)
        return Handshake(host: host, guest: guest, start: start, reply: reply, guestStep: step)
    }
}

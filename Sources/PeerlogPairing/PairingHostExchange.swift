import PeerlogCrypto

/// The host's side of one pairing exchange (docs/PROTOCOL.md §20.4), made by
/// ``PairingOffer/beginExchange(now:)``. Send ``opening`` on connect, pass every message from the guest
/// to ``receive(_:)`` and do what it returns; when it yields the guest's payload, answer with
/// ``finish(hostPayload:)`` or ``refuse(reason:)``. No I/O, no clock: the caller enforces
/// `exchangeTimeout` and closes the connection after a final message.
public struct PairingHostExchange: Sendable {
    /// What the host does after a guest message.
    public enum HostStep: Sendable {
        /// Send these bytes to the guest and wait for its next message.
        case send([UInt8])
        /// Keys agreed and confirmed: the guest's payload. Check it, then call `finish` or `refuse`.
        case guestPayload([UInt8])
        /// The exchange is over; send `reply` (a `pair_error`) if there is one, then close.
        case failed(PairingError, reply: [UInt8]?)
    }

    private enum State: Sendable {
        case awaitingStart
        case awaitingConfirm(PairingKeys)
        case awaitingPayload(PairingKeys)
        case finished
        case failed
    }

    /// The `pair_open` message, to send first on connect.
    public let opening: [UInt8]
    private let limits: PairingLimits
    private let cpace: CPace
    private var state = State.awaitingStart

    /// The 32-byte transcript hash payload signatures cover, once keys are agreed (after `pair_start`).
    public private(set) var transcriptHash: [UInt8]?
    /// Six digits (`"123 456"`) both sides can show and people compare, once keys are agreed; equal on
    /// both sides exactly when nobody stood in the middle.
    public private(set) var confirmation: String?

    init(code: PairingCode, purpose: PairingPurpose, limits: PairingLimits) {
        let sid = SecureRandom.bytes(PairingMessage.sidLength)
        // A fresh random scalar never gives the identity, so this cannot throw.
        cpace = try! CPace(
            role: .responder, password: code.password, sid: sid,
            channelIdentifier: PairingKeys.channelIdentifier(purpose: purpose, nameplate: code.nameplate),
            associatedData: PairingKeys.hostAssociatedData)
        opening = PairingMessage.open(
            version: PairingMessage.version, purpose: purpose.rawValue, nameplate: UInt64(code.nameplate), sid: sid,
            commit: PairingKeys.commitment(to: cpace.share)
        ).encoded()
        self.limits = limits
    }

    /// Whether the next guest message is its share (`pair_start`): taking it spends an attempt.
    public var awaitsGuestShare: Bool {
        if case .awaitingStart = state { return true }
        return false
    }

    /// Takes the guest's next message.
    public mutating func receive(_ message: [UInt8]) -> HostStep {
        switch state {
        case .finished, .failed:
            return .failed(PairingError(.unexpectedMessage, "the exchange is over"), reply: nil)
        default: break
        }
        let decoded: PairingMessage
        do { decoded = try PairingMessage.decode(message, maxBytes: limits.maxMessageBytes) } catch {
            return fail(error)
        }
        switch (state, decoded) {
        case (_, .error(let code, let reason)):
            state = .failed
            let error =
                code == ErrorCode<PairingError>.wrongCode.name
                ? PairingError(.wrongCode, "the guest's key confirmation failed") : PairingError(.refused, reason)
            return .failed(error, reply: nil)
        case (.awaitingStart, .start(let ya)):
            let isk: SecureBytes
            do { isk = try cpace.sharedKey(peerShare: ya, peerAssociatedData: PairingKeys.guestAssociatedData) } catch {
                return fail(PairingError(.malformed, "the guest's share is not a valid group element"))
            }
            let keys = PairingKeys(
                isk: isk,
                transcriptHash: PairingKeys.transcriptHash(open: opening, start: message, hostShare: cpace.share))
            transcriptHash = keys.transcriptHash
            confirmation = keys.confirmation
            state = .awaitingConfirm(keys)
            return .send(PairingMessage.reply(yb: cpace.share, confirm: keys.hostConfirm).encoded())
        case (.awaitingConfirm(let keys), .confirm(let tag, let box)):
            guard constantTimeEquals(tag, keys.guestConfirm) else {
                return fail(PairingError(.wrongCode, "the guest's key confirmation does not match"))
            }
            guard let payload = keys.open(box, key: keys.guestBox) else {
                return fail(PairingError(.badPayload, "the guest's box does not authenticate"))
            }
            state = .awaitingPayload(keys)
            return .guestPayload(payload)
        default:
            return fail(PairingError(.unexpectedMessage, "\(decoded.type) is not expected now"))
        }
    }

    private mutating func fail(_ error: PairingError) -> HostStep {
        state = .failed
        return .failed(error, reply: error.wireMessage)
    }

    /// Seals the host's payload into `pair_done`, the exchange's last message. Throws `unexpectedMessage`
    /// before the guest's payload arrived or after the end, `badPayload` if the message would exceed
    /// `maxMessageBytes`.
    public mutating func finish(hostPayload: [UInt8]) throws -> [UInt8] {
        guard case .awaitingPayload(let keys) = state else {
            throw PairingError(.unexpectedMessage, "finish needs the guest's payload first")
        }
        let message = PairingMessage.done(box: keys.seal(hostPayload, key: keys.hostBox)).encoded()
        guard message.count <= limits.maxMessageBytes else {
            throw PairingError(
                .badPayload, "host payload makes a \(message.count)-byte message, limit \(limits.maxMessageBytes)")
        }
        state = .finished
        return message
    }

    /// Ends the exchange with a `pair_error` carrying `reason` (at most 1,024 bytes of UTF-8; longer is
    /// cut), to send before closing. The guest fails with `refused` and this reason.
    public mutating func refuse(reason: String) -> [UInt8] {
        state = .failed
        return PairingMessage.error(code: ErrorCode<PairingError>.refused.name, reason: reason).encoded()
    }
}

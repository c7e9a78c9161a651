import PeerlogCrypto

/// The guest's side of one pairing exchange (docs/PROTOCOL.md §20.4): the device that typed the code.
/// Pass every message from the host to ``receive(_:)``; on `readyForPayload` (the host proved it knows
/// the code) send ``send(guestPayload:)``'s bytes; `done` carries the host's payload. No I/O, no clock.
public struct PairingGuestExchange: Sendable {
    /// What the guest does after a host message.
    public enum GuestStep: Sendable {
        /// Send these bytes to the host and wait for its next message.
        case send([UInt8])
        /// Keys agreed and the host's confirmation checked: build the payload (it may sign
        /// ``transcriptHash``) and call `send(guestPayload:)`.
        case readyForPayload
        /// The host's payload: the exchange succeeded.
        case done(hostPayload: [UInt8])
        /// The exchange is over; send ``failureMessage`` if there is one, then close. A host's
        /// `pair_error` gives `refused` with the host's reason.
        case failed(PairingError)
    }

    private enum State: Sendable {
        case awaitingOpen
        case awaitingReply(CPace, open: [UInt8], start: [UInt8], commit: [UInt8])
        case ready(PairingKeys)
        case awaitingDone(PairingKeys)
        case finished
        case failed
    }

    private let code: PairingCode
    private let purpose: PairingPurpose
    private let limits: PairingLimits
    private var state = State.awaitingOpen

    /// The 32-byte transcript hash payload signatures cover, once keys are agreed and confirmed.
    public private(set) var transcriptHash: [UInt8]?
    /// Six digits (`"123 456"`) to show and compare with the host's, once keys are confirmed.
    public private(set) var confirmation: String?
    /// After a failure found here (wrong code, malformed or unexpected host message), a `pair_error` to
    /// send the host before closing so it can log why; nil otherwise.
    public private(set) var failureMessage: [UInt8]?

    /// A guest exchange for `code`, expecting a host session for `purpose` with the code's nameplate.
    public init(code: PairingCode, purpose: PairingPurpose, limits: PairingLimits = PairingLimits()) {
        self.code = code
        self.purpose = purpose
        self.limits = limits
    }

    /// Takes the host's next message.
    public mutating func receive(_ message: [UInt8]) -> GuestStep {
        switch state {
        case .finished, .failed: return .failed(PairingError(.unexpectedMessage, "the exchange is over"))
        default: break
        }
        let decoded: PairingMessage
        do { decoded = try PairingMessage.decode(message, maxBytes: limits.maxMessageBytes) } catch {
            return fail(error)
        }
        switch (state, decoded) {
        case (_, .error(_, let reason)):
            state = .failed
            return .failed(PairingError(.refused, reason))
        case (.awaitingOpen, .open(let version, let hostPurpose, let nameplate, let sid, let commit)):
            guard version == PairingMessage.version else {
                return fail(PairingError(.malformed, "pairing protocol version \(version) is not supported"))
            }
            guard hostPurpose == purpose.rawValue, nameplate == UInt64(code.nameplate) else {
                return fail(
                    PairingError(
                        .unexpectedMessage,
                        "the host's session is \(hostPurpose.prefix(16)) \(nameplate), not \(purpose.rawValue) "
                            + "\(code.nameplate)"))
            }
            // A fresh random scalar never gives the identity, so this cannot throw.
            let cpace = try! CPace(
                role: .initiator, password: code.password, sid: sid,
                channelIdentifier: PairingKeys.channelIdentifier(purpose: purpose, nameplate: code.nameplate),
                associatedData: PairingKeys.guestAssociatedData)
            let start = PairingMessage.start(ya: cpace.share).encoded()
            state = .awaitingReply(cpace, open: message, start: start, commit: commit)
            return .send(start)
        case (.awaitingReply(let cpace, let open, let start, let commit), .reply(let yb, let tag)):
            guard constantTimeEquals(PairingKeys.commitment(to: yb), commit) else {
                return fail(PairingError(.malformed, "the host's share does not match its commitment"))
            }
            let isk: SecureBytes
            do { isk = try cpace.sharedKey(peerShare: yb, peerAssociatedData: PairingKeys.hostAssociatedData) } catch {
                return fail(PairingError(.malformed, "the host's share is not a valid group element"))
            }
            let keys = PairingKeys(
                isk: isk, transcriptHash: PairingKeys.transcriptHash(open: open, start: start, hostShare: yb))
            guard constantTimeEquals(tag, keys.hostConfirm) else {
                return fail(PairingError(.wrongCode, "the host's key confirmation does not match"))
            }
            transcriptHash = keys.transcriptHash
            confirmation = keys.confirmation
            state = .ready(keys)
            return .readyForPayload
        case (.awaitingDone(let keys), .done(let box)):
            guard let payload = keys.open(box, key: keys.hostBox) else {
                return fail(PairingError(.badPayload, "the host's box does not authenticate"))
            }
            state = .finished
            return .done(hostPayload: payload)
        default:
            return fail(PairingError(.unexpectedMessage, "\(decoded.type) is not expected now"))
        }
    }

    private mutating func fail(_ error: PairingError) -> GuestStep {
        state = .failed
        failureMessage = error.wireMessage
        return .failed(error)
    }

    /// Seals the guest's payload into `pair_confirm`, after `readyForPayload`. Throws `unexpectedMessage`
    /// at any other time, `badPayload` if the message would exceed `maxMessageBytes`.
    public mutating func send(guestPayload: [UInt8]) throws -> [UInt8] {
        guard case .ready(let keys) = state else {
            throw PairingError(.unexpectedMessage, "send the payload after readyForPayload, once")
        }
        let message = PairingMessage.confirm(
            confirm: keys.guestConfirm, box: keys.seal(guestPayload, key: keys.guestBox)
        )
        .encoded()
        guard message.count <= limits.maxMessageBytes else {
            throw PairingError(
                .badPayload, "guest payload makes a \(message.count)-byte message, limit \(limits.maxMessageBytes)")
        }
        state = .awaitingDone(keys)
        return message
    }
}

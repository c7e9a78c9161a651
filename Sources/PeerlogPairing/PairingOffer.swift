/// One code's life on the host (docs/PROTOCOL.md §20.7): open until it is used, expires or has allowed
/// `maxAttempts` exchanges. Each exchange it starts costs an attempt, finished or not, because a guest
/// that saw the host's key-confirmation tag has tested one guess of the code.
public struct PairingOffer: Sendable {
    /// Where an offer is in its life.
    public enum State: Sendable, Hashable {
        /// It accepts a new exchange.
        case open
        /// An exchange succeeded and the host marked it used: single use.
        case used
        /// `now` reached `expiresAt`.
        case expired
        /// Every attempt was spent.
        case exhausted
    }

    /// The code people read and type.
    public let code: PairingCode
    /// What the code pairs for.
    public let purpose: PairingPurpose
    /// When the code dies, in milliseconds since 1970 (the offer is expired from this instant on).
    public let expiresAt: UInt64
    /// The limits the exchanges use.
    public let limits: PairingLimits
    /// Exchanges still allowed: `maxAttempts` at first, one less per started exchange.
    public private(set) var attemptsLeft: Int
    /// Whether an exchange already paired with this code. Exchanges started earlier may still be
    /// running: check this before calling `finish(hostPayload:)` on one, so only one pairs.
    public private(set) var isUsed = false

    /// An open offer of `code` for `purpose`, dying at `expiresAt` (milliseconds since 1970).
    public init(code: PairingCode, purpose: PairingPurpose, expiresAt: UInt64, limits: PairingLimits = PairingLimits())
    {
        self.code = code
        self.purpose = purpose
        self.expiresAt = expiresAt
        self.limits = limits
        self.attemptsLeft = limits.maxAttempts
    }

    /// The offer's state at `now` (milliseconds since 1970): used, else expired, else exhausted, else open.
    public func state(now: UInt64) -> State {
        if isUsed { return .used }
        if now >= expiresAt { return .expired }
        if attemptsLeft <= 0 { return .exhausted }
        return .open
    }

    /// Starts an exchange with a connecting guest and counts it as an attempt; refuses with `used`,
    /// `expired` or `exhausted` (send the error's `wireMessage`, then close).
    public mutating func beginExchange(now: UInt64) -> Result<PairingHostExchange, PairingError> {
        switch state(now: now) {
        case .used: return .failure(PairingError(.used, "this code has already been used"))
        case .expired: return .failure(PairingError(.expired, "this code has expired"))
        case .exhausted:
            return .failure(PairingError(.exhausted, "this code allowed \(limits.maxAttempts) attempts and is dead"))
        case .open:
            attemptsLeft -= 1
            return .success(PairingHostExchange(code: code, purpose: purpose, limits: limits))
        }
    }

    /// Marks the offer used once the host finished an exchange: it starts no further one (and callers
    /// refuse, rather than finish, exchanges still running; see ``isUsed``). An exchange started before
    /// `expiresAt` may finish after it, within `exchangeTimeout` per message.
    public mutating func markUsed() { isUsed = true }
}

/// One code's life on the host (docs/PROTOCOL.md §20.7): open until it is used, expires or has allowed
/// `maxAttempts` guesses. An exchange costs an attempt once the guest sends its share (`pair_start`),
/// finished or not, because a guest that saw the host's key-confirmation tag has tested one guess of
/// the code; a connection that sends no share costs nothing.
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
    /// Guesses still allowed: `maxAttempts` at first, one less per guest share taken.
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

    /// Starts an exchange with a connecting guest without spending an attempt (call
    /// ``spendAttempt(now:)`` when the guest's share arrives); refuses with `used`, `expired` or
    /// `exhausted` (send the error's `wireMessage`, then close).
    public func openExchange(now: UInt64) -> Result<PairingHostExchange, PairingError> {
        if let refusal = refusal(now: now) { return .failure(refusal) }
        return .success(PairingHostExchange(code: code, purpose: purpose, limits: limits))
    }

    /// Spends one attempt for a guest's share, or says why the offer takes no more.
    public mutating func spendAttempt(now: UInt64) -> PairingError? {
        if let refusal = refusal(now: now) { return refusal }
        attemptsLeft -= 1
        return nil
    }

    /// ``openExchange(now:)`` and ``spendAttempt(now:)`` at once: an exchange whose attempt is
    /// already counted (tests and tools that drive both sides in memory).
    public mutating func beginExchange(now: UInt64) -> Result<PairingHostExchange, PairingError> {
        if let refusal = spendAttempt(now: now) { return .failure(refusal) }
        return .success(PairingHostExchange(code: code, purpose: purpose, limits: limits))
    }

    /// Why the offer is not open at `now`, as the error a guest is sent; nil while open.
    public func refusal(now: UInt64) -> PairingError? { Self.refusal(state(now: now)) }

    /// What a guest is told of an offer in `state` (nil while open); the host says the same of
    /// a session that already ended that way.
    public static func refusal(_ state: State) -> PairingError? {
        switch state {
        case .used: PairingError(.used, "this code has already been used; ask for a new one")
        case .expired: PairingError(.expired, "this code has expired; ask for a new one")
        case .exhausted: PairingError(.exhausted, "this code was spent by failed attempts; ask for a new one")
        case .open: nil
        }
    }

    /// Marks the offer used once the host finished an exchange: it starts no further one (and callers
    /// refuse, rather than finish, exchanges still running; see ``isUsed``). An exchange started before
    /// `expiresAt` may finish after it, within `exchangeTimeout` per message.
    public mutating func markUsed() { isUsed = true }
}

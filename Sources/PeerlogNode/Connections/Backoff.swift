/// Reconnect delays: exponential from `initial` to `maximum`, with jitter so peers that lost
/// each other at the same moment do not redial in lockstep.
public struct Backoff: Sendable {
    /// The first delay, before jitter: 1 s.
    public static let initial: Duration = .seconds(1)
    /// The longest delay, before jitter: 60 s.
    public static let maximum: Duration = .seconds(60)

    /// Delays handed out since the last `reset()`: one per failed attempt.
    public private(set) var failures = 0

    /// A schedule with no failures yet.
    public init() {}

    /// The delay before the next attempt after one more failure: the un-jittered delay is
    /// 1 s, 2 s, 4 s … capped at 60 s; the result is uniform in [delay/2, delay], never below 1 s.
    public mutating func nextDelay<R: RandomNumberGenerator>(using rng: inout R) -> Duration {
        let exponent = min(failures, 6)
        failures += 1
        let ceiling = min(Self.initial * (1 << exponent), Self.maximum)
        let ms = Int64(ceiling.components.seconds) * 1000
        let jittered = Int64.random(in: (ms / 2)...ms, using: &rng)
        return .milliseconds(max(jittered, 1000))
    }

    /// `nextDelay(using:)` with the system's random number generator.
    public mutating func nextDelay() -> Duration {
        var rng = SystemRandomNumberGenerator()
        return nextDelay(using: &rng)
    }

    /// A connection that completed its handshake resets the schedule.
    public mutating func reset() { failures = 0 }
}

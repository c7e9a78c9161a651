import PeerlogModel

/// The offline limits of one group as this replica applies them (docs/PROTOCOL.md §10.5): the
/// replica's `ReplicaLimits` defaults, or the group's own override.
public struct OfflineLimits: Sendable, Hashable {
    /// Most of this device's own writes that may wait for a seq in the group.
    public var maxWaiting: Int
    /// Oldest age (ms) a waiting write may reach before application writes are refused.
    public var maxAgeMillis: UInt64
    /// Group operations may go this many writes past `maxWaiting`, whatever the age.
    public var groupOperationReserve: Int

    /// Limits as given.
    public init(maxWaiting: Int, maxAgeMillis: UInt64, groupOperationReserve: Int) {
        self.maxWaiting = maxWaiting
        self.maxAgeMillis = maxAgeMillis
        self.groupOperationReserve = groupOperationReserve
    }
}

/// How far this device is from a group's offline limits: what `status` shows.
public struct OfflineHeadroom: Sendable, Hashable {
    /// This device's own writes in the group that have no seq yet.
    public let waiting: Int
    /// When this replica stored the oldest of them (ms since 1970); nil when none waits.
    public let oldestStoredAt: UInt64?
    /// The clock's time when the headroom was read (ms since 1970).
    public let now: UInt64
    /// The limits that apply.
    public let limits: OfflineLimits
    /// Whether `limits.maxWaiting` is the group's own override rather than the replica's default.
    public let overridesMaxWaiting: Bool
    /// Whether `limits.maxAgeMillis` is the group's own override rather than the replica's default.
    public let overridesMaxAge: Bool

    /// The headroom of `waiting` writes, the oldest stored at `oldestStoredAt`, at `now`.
    public init(
        waiting: Int, oldestStoredAt: UInt64?, now: UInt64, limits: OfflineLimits, overridesMaxWaiting: Bool = false,
        overridesMaxAge: Bool = false
    ) {
        self.waiting = waiting
        self.oldestStoredAt = oldestStoredAt
        self.now = now
        self.limits = limits
        self.overridesMaxWaiting = overridesMaxWaiting
        self.overridesMaxAge = overridesMaxAge
    }

    /// How long the oldest waiting write has waited (ms); nil when none waits.
    public var oldestAgeMillis: UInt64? { oldestStoredAt.map { now > $0 ? now - $0 : 0 } }

    /// Application writes still allowed before the count limit (0 at or past it).
    public var remaining: Int { max(0, limits.maxWaiting - waiting) }

    /// Why writing `adding` more receipts here would pass a limit; nil when it would not.
    /// Application writes stop at `maxWaiting` waiting and once the oldest is older than
    /// `maxAgeMillis`; group operations (`onlyGroupOperations`) only at `maxWaiting` plus the
    /// reserve, so a member can still leave, remove a lost device or delete the group.
    public func refusal(adding: Int, onlyGroupOperations: Bool, group: GroupID) -> ReplicaError? {
        let fix = "nothing was written: connect to the group's sequencer so they commit, then write again"
        if onlyGroupOperations {
            // Saturating: a group may set its limit as high as `Int.max`.
            let (sum, overflow) = limits.maxWaiting.addingReportingOverflow(limits.groupOperationReserve)
            guard waiting + adding > (overflow ? Int.max : sum) else { return nil }
            return ReplicaError(
                .offlineLimitReached,
                "group \(group): \(waiting) of this device's writes wait for a seq; \(adding) more would pass the offline limit of \(limits.maxWaiting) (maxWaitingLocalWrites) plus \(limits.groupOperationReserve) for group operations (offlineGroupOperationReserve); \(fix)"
            )
        }
        if waiting + adding > limits.maxWaiting {
            return ReplicaError(
                .offlineLimitReached,
                "group \(group): \(waiting) of this device's writes wait for a seq; \(adding) more would pass the offline limit of \(limits.maxWaiting) (maxWaitingLocalWrites); \(fix)"
            )
        }
        if let age = oldestAgeMillis, age > limits.maxAgeMillis {
            return ReplicaError(
                .offlineLimitReached,
                "group \(group): this device's oldest write waiting for a seq is \(Self.describe(age)) old, past the offline limit of \(Self.describe(limits.maxAgeMillis)) (maxWaitingLocalAgeMillis); \(fix)"
            )
        }
        return nil
    }

    /// A duration for people: the largest whole unit, with the exact milliseconds when the unit
    /// rounds (so a refusal at the boundary says why).
    package static func describe(_ ms: UInt64) -> String {
        let units: [(UInt64, String)] = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1_000, "s")]
        for (size, name) in units where ms >= size {
            return ms % size == 0 ? "\(ms / size) \(name)" : "\(ms / size) \(name) (\(ms) ms)"
        }
        return "\(ms) ms"
    }
}

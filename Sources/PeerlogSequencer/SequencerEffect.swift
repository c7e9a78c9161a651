/// What the driver must do after a call. Perform effects in array order; a `persist`, if
/// present, is always first and must be durable before any later `send`.
public enum SequencerEffect<Voter: Hashable & Sendable, Item: Hashable & Sendable>: Sendable, Hashable {
    /// Make this change durable (fsync) before performing any later effect.
    case persist(SequencerPersistentChange<Voter, Item>)
    /// Deliver `message` to voter `to` (best effort; loss, duplication and reordering are fine).
    case send(to: Voter, SequencerMessage<Item>)
    /// Entries newly known committed, contiguous and in seq order, each exactly once per
    /// process lifetime (after a restart they are reported again unless `committedThrough`
    /// was restored). `asLeader` is true only when this voter, as leader of the current term,
    /// established the commit: only then may it sign envelopes. Followers report only.
    case committed([SequencerEntry<Item>], asLeader: Bool)
    /// The role, term or known leader changed; the values are the state after the call.
    case roleChanged(SequencerRole, term: UInt64, leader: Voter?)
    /// A peer's message was refused because obeying it would break a Raft invariant or
    /// it was malformed. Never seen between correct voters: log it, maybe drop the peer.
    case violation(SequencerError)
}

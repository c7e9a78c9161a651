import PeerlogCrypto

/// What went wrong in this device's part of an elected authority (``ElectedSequencerDriver``):
/// its own store failing, or a voter breaking the protocol. None stops the node; each is worth
/// a log line. Equality is on ``code`` only, so codes can be matched while diagnostics stay
/// free-form (a `CodedFailure`).
typealias ElectionError = CodedFailure<ElectionDomain>

/// The domain of `ElectionError`.
enum ElectionDomain: ErrorDomain {
    /// Its detail is a whole sentence (it names the group).
    static var wording: ErrorWording { .detail }
}

extension ErrorCode where Domain == ElectionError {
    /// The replica held no sequencer state right after resetting it.
    static let noSequencerState = Self("noSequencerState")
    /// The group's sequencer could not be started (its stored state or configuration).
    static let cannotStart = Self("cannotStart")
    /// The leader could not read the tentative receipts it would assign.
    static let cannotReadTentative = Self("cannotReadTentative")
    /// A new leader could not write its term marker (§18.4).
    static let cannotWriteTermMarker = Self("cannotWriteTermMarker")
    /// A state change could not be made durable: the step was dropped, the machine restarted.
    static let cannotPersist = Self("cannotPersist")
    /// Committed assignments could not be signed and applied.
    static let cannotSign = Self("cannotSign")
    /// A voter sent what no correct voter sends (the machine's `SequencerError`); ignored.
    static let peerViolation = Self("peerViolation")
}

/// The one error type of this module.
///
/// Thrown for our own misuse (a bad configuration or persisted state at `init`) and carried
/// by ``SequencerEffect/violation(_:)`` when a peer's message is refused. Equality is on
/// ``code`` only, so codes can be matched while diagnostics stay free-form.
public struct SequencerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidConfig, notAVoter, invalidPersistedState
            case malformedMessage, wouldTruncateCommitted, conflictingLeader, duplicateItem
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The voter set or timing parameters are unusable.
        public static let invalidConfig = Code(.invalidConfig)
        /// `me` is not one of the configured voters.
        public static let notAVoter = Code(.notAVoter)
        /// The persisted state handed to `init` is inconsistent.
        public static let invalidPersistedState = Code(.invalidPersistedState)
        /// A peer sent a message that no correct voter sends; it was ignored.
        public static let malformedMessage = Code(.malformedMessage)
        /// Safety: obeying the message would remove a committed entry; it was refused.
        public static let wouldTruncateCommitted = Code(.wouldTruncateCommitted)
        /// Safety: another voter claims leadership of the term this voter leads.
        public static let conflictingLeader = Code(.conflictingLeader)
        /// Safety: the leader sent an item this log already holds at another seq.
        public static let duplicateItem = Code(.duplicateItem)

        /// The code's name, e.g. `wouldTruncateCommitted`.
        public var description: String { "\(base)" }
    }

    /// The kind of failure.
    public let code: Code
    /// Human-readable diagnostics (no secrets live in this module).
    public let detail: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Code and detail, e.g. for a log line.
    public var description: String { "SequencerError.\(code): \(detail)" }
}

import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Which state a query sees.
public enum View: String, Sendable, CaseIterable {
    /// The committed prefix only: identical on every replica that holds the same envelopes.
    case committed
    /// The committed prefix, then tentative receipts in the deterministic tentative order.
    case tentative
}

/// Work the replica asks the network layer to do; it never does I/O itself.
public enum ReplicaAction: Hashable, Sendable {
    /// Fetch the committed envelopes (and their receipts) for `from...to`.
    case requestSeqRange(group: GroupID, from: UInt64, to: UInt64)
    /// Fetch an author's receipts with counters `from...to`.
    case requestAuthorCounters(group: GroupID, author: DeviceID, from: UInt64, to: UInt64)
    /// Fetch receipts by CID (an envelope names a receipt we do not hold).
    case requestReceipts(group: GroupID, cids: [CID])
}

/// What happened, delivered to subscribers after the transaction commits, in order.
public enum ReplicaEvent: Hashable, Sendable {
    /// A receipt was stored and is tentative (no envelope yet).
    case tentative(group: GroupID, cid: CID, type: String)
    /// A receipt was committed at `seq`; `rejected` holds the reason when it had no effect.
    case committed(group: GroupID, seq: UInt64, cid: CID, type: String, rejected: String?)
    /// The committed order differs from the tentative guess: views were reordered.
    case reordered(group: GroupID, seq: UInt64, expected: CID, committed: CID)
    /// An application receipt (not group.* or entity.*) was committed, in seq order.
    case application(group: GroupID, seq: UInt64, receipt: Receipt)
    /// Two receipts claim the same (group, author, counter): the author is flagged.
    case equivocation(group: GroupID, author: DeviceID, counter: UInt64, cids: [CID])
    /// The local sequencer refused to sequence a receipt.
    case refused(group: GroupID, cid: CID, reason: String)
    /// A queued item gave up and went to dead letters.
    case deadLettered(kind: QueuedKind, cid: CID, reason: String)
}

/// An automatic snapshot or compaction that could not complete (docs/PROTOCOL.md §23.4): the
/// commits it followed stand; it is tried again later.
public struct MaintenanceSkipped: Sendable, Hashable {
    /// The group.
    public let group: GroupID
    /// Why, in one line (for a full disk, how much space it needs).
    public let reason: String
    /// When it failed (ms).
    public let at: UInt64
}

/// One peer's batch for `Replica.ingest(parts:)`: what `ingest(receipts:envelopes:from:)` takes.
public struct IngestPart: Sendable {
    /// The receipts, in the order the peer sent them.
    public var receipts: [Receipt]
    /// The envelopes, in the order the peer sent them.
    public var envelopes: [Envelope]
    /// The device that sent them (recorded with any that fail verification).
    public var from: DeviceID?

    /// A batch of `receipts` and `envelopes` from `from`.
    public init(receipts: [Receipt], envelopes: [Envelope] = [], from: DeviceID? = nil) {
        self.receipts = receipts
        self.envelopes = envelopes
        self.from = from
    }
}

/// The result of one `ingest` call.
public struct IngestReport: Sendable, Equatable {
    /// Receipts stored (each new, with its author's earlier counters held).
    public var stored = 0
    /// Inputs already held: receipts, and envelopes already committed with the same receipt.
    public var duplicates = 0
    /// Receipts held back waiting for an author's missing counters (a fetch is requested).
    public var queued = 0
    /// Receipts committed (given a seq) by this call.
    public var committed = 0
    /// Inputs for a deleted group: receipts of it, envelopes past its deletion.
    public var ignored = 0
    /// Refused inputs with the reason (invalid signature, not the sequencer, …).
    public var rejected: [(cid: CID, reason: String)] = []
    /// Those of `rejected` that failed signature or certificate checks (possible forgeries).
    public var invalid: [CID] = []
    /// Fetches this call asks the network layer to make, in order.
    public var actions: [ReplicaAction] = []
    /// What happened, in order; also delivered to subscribers after the commit.
    public var events: [ReplicaEvent] = []
    /// Groups where a shared relay store refused an assignment (another relay process took
    /// the seq): catch up from that store, then sequencing resumes.
    public var contended: Set<GroupID> = []
    /// Groups with assignments for the `SequenceGate`'s driver to reserve and commit
    /// (`Replica.sequenceThroughGate`).
    var gated: Set<GroupID> = []
    /// Receipts this call stored, in order, on a replica with a `SequenceGate`: what its driver
    /// hands over where another process holds the group's lease.
    var storedForGate: [Receipt] = []
    /// Groups this call found sequenced here (gated or not): their stored receipts are kept for
    /// the driver even when nothing in them could be assigned yet.
    var sequencedHere: Set<GroupID> = []
    /// Devices this device should hand a group's epoch keys to, found while committing
    /// (`Replica.shareEpochKeys`, after the transaction).
    var keyShares: [(group: GroupID, certificate: DeviceCertificate)] = []
    /// Encrypted groups whose keys a departure emptied: this device starts a new epoch after the
    /// transaction (`Replica.rotateEpochIfDue`).
    var rotations: Set<GroupID> = []
    /// Compactions this transaction ran (after an automatic snapshot, §23.4).
    public var compactions: [CompactionResult] = []
    /// Automatic snapshots (and compactions) that could not be written after this call's commits,
    /// with the reason; retried later (docs/PROTOCOL.md §23.4).
    public var maintenanceSkipped: [MaintenanceSkipped] = []
    /// Groups whose committed mark crossed their snapshot interval in this call's transaction:
    /// their snapshot and compaction run after it commits.
    package var snapshotsDue: [GroupID] = []
    /// Seqs of the snapshots this transaction installed (§23.3).
    public var snapshotsInstalled: [UInt64] = []

    /// An empty report: every count 0, every list empty.
    public init() {}

    /// A group operation (`group.*`) was stored or committed: membership or the sequencer
    /// authority may have changed. Costs the report's length, not the store's.
    public var touchesGroupOperations: Bool {
        events.contains { e in
            switch e {
            case .tentative(_, _, let type), .committed(_, _, _, let type, _): type.hasPrefix("group.")
            default: false
            }
        }
    }

    /// Compares the counts, the CIDs of `rejected` (not the reasons), `actions` and `events`;
    /// `invalid` and `contended` are not compared.
    public static func == (l: IngestReport, r: IngestReport) -> Bool {
        l.stored == r.stored && l.duplicates == r.duplicates && l.queued == r.queued && l.committed == r.committed
            && l.ignored == r.ignored && l.rejected.map(\.cid) == r.rejected.map(\.cid) && l.actions == r.actions
            && l.events == r.events
    }

    mutating func merge(_ other: IngestReport) {
        stored += other.stored
        duplicates += other.duplicates
        queued += other.queued
        committed += other.committed
        ignored += other.ignored
        rejected += other.rejected
        invalid += other.invalid
        actions += other.actions
        events += other.events
        contended.formUnion(other.contended)
        gated.formUnion(other.gated)
        storedForGate += other.storedForGate
        sequencedHere.formUnion(other.sequencedHere)
        compactions += other.compactions
        maintenanceSkipped += other.maintenanceSkipped
        snapshotsInstalled += other.snapshotsInstalled
    }
}

/// The result of a local write.
public struct AppendResult: Sendable, Equatable {
    /// The signed receipt that was written.
    public let receipt: Receipt
    /// The committed position when the local device is the group's sequencer (nil on a replica
    /// with a `SequenceGate`: its gate driver commits the receipt after the write).
    public let seq: UInt64?
}

/// Where an item of a view comes from.
public enum ItemStatus: Hashable, Sendable {
    case committed(seq: UInt64)
    case tentative
}

/// An entity's current value in a view.
public struct EntityValue: Hashable, Sendable {
    /// The entity key: 1...`GroupLimits.maxEntityKeyBytes` bytes of UTF-8.
    public let key: String
    /// The value the receipt set.
    public let value: CBOR
    /// The receipt that wrote it.
    public let cid: CID
    /// Whether the write is committed (at the receipt's seq) or still tentative.
    public let status: ItemStatus
}

/// One line of a group's log.
public struct LogItem: Hashable, Sendable {
    /// The receipt, as signed.
    public let receipt: Receipt
    /// Committed at a seq, or tentative (only in the tentative view).
    public let status: ItemStatus
    /// Nil when the receipt took effect; otherwise why not (for tentative items: why it would not).
    public let rejected: String?
}

/// A member as a view shows it.
public struct MemberView: Hashable, Sendable {
    /// The member's entry in the view.
    public let member: Member
    /// `.committed(seq:)` when the entry equals the committed state's (the seq its standing
    /// dates from), `.tentative` when tentative receipts changed it.
    public let status: ItemStatus
}

/// The one error type of `PeerlogEngine`: why a local operation (a write, a lookup, an
/// import) failed.
///
/// Switch on ``code`` (a `switch` over the static members, with a `default:`: codes may be
/// added); ``detail`` is one sentence for people. Equality is on ``code`` only. Descriptions
/// hold ids, names and counts, never keys, values or SQL arguments.
public typealias ReplicaError = CodedFailure<ReplicaDomain>

/// The domain of ``ReplicaError``.
public enum ReplicaDomain: ErrorDomain {
    /// Its detail is a whole sentence.
    public static var wording: ErrorWording { .detail }
}

extension CodedFailure where Domain == ReplicaDomain {
    /// The refusal of a group's rules, with its code and reason.
    public init(_ violation: RuleViolation, file: String = #fileID, line: Int = #line) {
        self.init(violation.code, violation.reason, file: file, line: line)
    }
}

extension ErrorCode where Domain == ReplicaError {
    /// No group with that id or name is held here, or the operation needs a group that does
    /// not exist yet.
    public static let groupNotFound = Self("groupNotFound")
    /// Several groups have that name; use the group id.
    public static let ambiguousGroupName = Self("ambiguousGroupName")
    /// The group was deleted; nothing more can be written to it.
    public static let groupDeleted = Self("groupDeleted")
    /// The writer (or the identity it names) is not an active member of the group.
    public static let notAMember = Self("notAMember")
    /// The writer's role does not allow the operation (only an owner or admin may …).
    public static let notPermitted = Self("notPermitted")
    /// Every seat of the group (`max_members`) is taken.
    public static let groupFull = Self("groupFull")
    /// Another rule of the group (docs/PROTOCOL.md §9.3) refuses the operation.
    public static let ruleViolation = Self("ruleViolation")
    /// The operation is malformed or a field is out of its limits (a key too long, an
    /// unknown or reserved receipt type, a bad sequencer authority).
    public static let invalidOperation = Self("invalidOperation")
    /// A receipt payload (or a batch's payloads together) would be over the limit.
    public static let payloadTooLarge = Self("payloadTooLarge")
    /// A batch holds more operations than `maxBatchOperations`.
    public static let batchTooLarge = Self("batchTooLarge")
    /// An export file to import is malformed or incomplete (the detail names the line).
    public static let invalidImport = Self("invalidImport")
    /// Stored state cannot be read back: the store is damaged.
    public static let storeCorrupt = Self("storeCorrupt")
    /// The group is encrypted and this device does not hold the epoch key in use: it arrives
    /// sealed to this device from another member's device (docs/PROTOCOL.md §22.5).
    public static let epochKeyMissing = Self("epochKeyMissing")
    /// A snapshot is not taken (docs/PROTOCOL.md §23.3): malformed, its content does not hash to
    /// its state hash, its sender is not a member, its anchor is not signed by the sequencer
    /// authority in force here, it contradicts what is held here, this device sequences the
    /// group, or (holding nothing of the group) this device does not trust its sender.
    public static let snapshotRefused = Self("snapshotRefused")
    /// The disk holding the store is full: the write was not made (the detail says how much
    /// space it needs where that is known).
    public static let diskFull = Self("diskFull")
    /// No snapshot can be made now: the detail says why (the group's state is over
    /// `GroupSnapshot.maxEncodedBytes`, committed receipts wait for an epoch key, this device is
    /// not an active member, or nothing is committed yet).
    public static let snapshotUnavailable = Self("snapshotUnavailable")
    /// The group's log below its floor is not held here (it started from a snapshot, or was
    /// compacted: docs/PROTOCOL.md §23.2), and the operation needs the whole log (an export).
    public static let logIncomplete = Self("logIncomplete")
    /// The write would pass one of the group's offline limits (docs/PROTOCOL.md §10.5): too many
    /// of this device's writes wait for a seq, or the oldest has waited too long. Nothing was
    /// written; it passes again once the group's sequencer commits them.
    public static let offlineLimitReached = Self("offlineLimitReached")
    /// A blob held here does not open with the key its reference carries (docs/PROTOCOL.md §24):
    /// the reference was made wrong, or the file was changed.
    public static let blobUnreadable = Self("blobUnreadable")
    /// The value's blob is not held whole here yet: fetch it from a peer that holds it.
    public static let blobNotHeld = Self("blobNotHeld")
}

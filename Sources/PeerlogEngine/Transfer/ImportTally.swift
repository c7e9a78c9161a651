import PeerlogEncoding
import PeerlogModel

/// What an import did with an export file's lines (docs/PROTOCOL.md §13.2), counted: memory
/// stays the same whatever the file's size (refusals are listed up to a limit, all counted).
///
/// An input is *taken* when this replica holds it afterwards as the exporter did: stored,
/// held already, queued for a missing predecessor, kept as evidence of equivocation, or
/// committed by the rules with no effect (a rejected operation is still part of the log).
/// It is *refused* when the replica would not hold it (a signature or certificate that does
/// not verify, an author revoked here, an envelope not from the group's sequencer or in
/// conflict with a committed seq, a full queue) and *ignored* when its group is deleted here.
public struct ImportTally: Sendable, Hashable {
    /// Receipt lines in the file (equivocation evidence included).
    public var receiptLines = 0
    /// Envelope lines in the file.
    public var envelopeLines = 0
    /// New receipts stored.
    public var stored = 0
    /// Inputs held already.
    public var duplicates = 0
    /// Receipts committed (given their seq) by this import.
    public var committed = 0
    /// Receipts committed by this import that the group rules rejected (no effect; taken).
    public var ruleRejected = 0
    /// Inputs waiting for others (an author's earlier counters, an earlier seq).
    public var queued = 0
    /// Receipts kept as evidence of equivocation (a second receipt for an author's counter).
    public var equivocations = 0
    /// Inputs for a group deleted on this replica: not taken.
    public var ignored = 0
    /// Inputs refused (never applied): see `refusals` for the reasons.
    public var refused = 0
    /// Those of `refused` whose signature or certificate failed (possible forgeries; listed
    /// by `dead-letters` as kind `invalid`).
    public var invalid = 0
    /// The first `ReplicaLimits.maxListedImportRefusals` refusals, in file order.
    public var refusals: [ImportRefusal] = []
    /// Blobs taken (written, or held already).
    public var blobs = 0
    /// Why blobs were refused (each also counted in `refused`), up to `maxListedRefusals`.
    public var blobRefusals: [String] = []
    /// How many refusals `refusals` lists at most.
    public let maxListedRefusals: Int

    /// An empty tally listing up to `maxListedRefusals` refusals.
    public init(maxListedRefusals: Int) { self.maxListedRefusals = maxListedRefusals }

    /// True when every input was taken: nothing refused, nothing ignored.
    public var everythingTaken: Bool { refused == 0 && ignored == 0 }

    /// Counts a refused blob, keeping its reason while the list has room.
    mutating func refuseBlob(_ reason: String) {
        refused += 1
        if blobRefusals.count < maxListedRefusals { blobRefusals.append(reason) }
    }

    /// Adds one ingest call's report.
    mutating func add(_ report: IngestReport) {
        stored += report.stored
        duplicates += report.duplicates
        committed += report.committed
        queued += report.queued
        ignored += report.ignored
        refused += report.rejected.count
        invalid += report.invalid.count
        for r in report.rejected.prefix(max(0, maxListedRefusals - refusals.count)) {
            refusals.append(ImportRefusal(cid: r.cid, reason: r.reason))
        }
        for event in report.events {
            switch event {
            case .equivocation: equivocations += 1
            case .committed(_, _, _, _, .some): ruleRejected += 1
            default: break
            }
        }
    }
}

/// An input an import refused.
public struct ImportRefusal: Sendable, Hashable {
    /// The receipt's CID (for an envelope: the receipt it names).
    public let cid: CID
    /// Why it was refused.
    public let reason: String
}

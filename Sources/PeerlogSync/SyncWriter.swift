import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// What a driver writes on a session's behalf: the batches a peer sent (`SyncAction.ingest`)
/// and the vectors it said it holds (`SyncAction.recordPeerVector`). `Replica` conforms.
public protocol SyncWriter: AnyObject {
    /// Verifies, stores and applies what `peer` sent.
    func ingest(receipts: [Receipt], envelopes: [Envelope], from peer: DeviceID?) throws -> IngestReport
    /// Verifies, stores and applies several batches, each reported as `ingest` would report it
    /// after the ones before it; `Replica` writes them in one transaction.
    func ingest(parts: [IngestPart]) throws -> [IngestReport]
    /// Verifies and installs a snapshot a peer of identity `sender` and device `device` sent
    /// (§23.3); `trustedForBootstrap`: see `SyncSession.Options.trustsPeerForBootstrap`.
    func installSnapshot(
        _ bundle: SnapshotBundle, from sender: IdentityID, device: DeviceID?, trustedForBootstrap: Bool
    ) throws -> IngestReport
    /// Replaces what `peer` last said it holds of `group` (the `peer_vectors` table).
    func recordPeerVector(peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64]) throws
}

extension Replica: SyncWriter {}

extension SyncWriter {
    /// One `ingest` per part, in order.
    public func ingest(parts: [IngestPart]) throws -> [IngestReport] {
        try parts.map { try ingest(receipts: $0.receipts, envelopes: $0.envelopes, from: $0.from) }
    }
}

extension SyncSession {
    /// For a driver that writes at once, in order: performs each `.ingest` in `actions` with
    /// `writer` and puts what ``ingested(_:)`` returns in its place, and records each
    /// `.recordPeerVector`. Returns the remaining actions (sends, closes, events) in order.
    /// A vector that cannot be recorded is dropped: it is advisory, and the peer's next one
    /// replaces it; a batch that cannot be ingested ends the session (`internal` error).
    public func settle(_ actions: [SyncAction], with writer: some SyncWriter) -> [SyncAction] {
        var out = [SyncAction]()
        out.reserveCapacity(actions.count)
        for action in actions {
            switch action {
            case .ingest(let batch) where batch.snapshot?.blob != nil:
                // A snapshot sent as a blob: a driver that fetches blobs takes it out first (the
                // node does). Here it is refused, and the session asks for the log.
                out += settle(snapshotBlobFetched(group: batch.group, bytes: nil), with: writer)
            case .ingest(let batch):
                let outcome = Result {
                    guard let bundle = batch.snapshot, let sender = batch.sender else {
                        return try writer.ingest(receipts: batch.receipts, envelopes: batch.envelopes, from: batch.from)
                    }
                    return try Self.install(
                        bundle, from: sender, device: batch.from, trusted: batch.trustedForBootstrap, with: writer)
                }
                out += settle(ingested(outcome), with: writer)
            case .recordPeerVector(let v):
                try? writer.recordPeerVector(
                    peer: v.peer, group: v.group, committed: v.committed, authors: v.countersByAuthor)
            case .send, .close, .event:
                out.append(action)
            }
        }
        return out
    }
}

extension SyncSession {
    /// A refused snapshot is the peer's fault, not the store's: reported as a rejection, and the
    /// session goes on (the receiver's vector then asks for the log).
    static func install(
        _ bundle: SnapshotBundle, from sender: IdentityID, device: DeviceID?, trusted: Bool,
        with writer: some SyncWriter
    ) throws
        -> IngestReport
    {
        do {
            return try writer.installSnapshot(bundle, from: sender, device: device, trustedForBootstrap: trusted)
        } catch let e as ReplicaError
            where e.code == .snapshotRefused
        {
            var report = IngestReport()
            report.rejected.append((CID(hashing: bundle.snapshot), e.detail))
            return report
        }
    }
}

extension PeerVector {
    /// The authors' counters by author (the highest, should the peer list one twice).
    public var countersByAuthor: [DeviceID: UInt64] {
        Dictionary(authors.map { ($0.author, $0.counter) }, uniquingKeysWith: max)
    }
}

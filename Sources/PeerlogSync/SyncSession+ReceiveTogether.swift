import PeerlogEngine
import PeerlogModel

extension SyncSession {
    /// For a driver that takes several messages at once, from one peer or several: passes each
    /// to its session, in order, and writes every batch they carry with one
    /// `writer.ingest(parts:)` (one transaction on a `Replica`, where one message at a time
    /// pays a commit per batch). Returns each message's actions with the writer that answers
    /// them: the driver settles each (`settle(_:with:)`) in order, all of them before it
    /// performs any (an event may reach any session, which must have no ingest waiting).
    /// When the write fails, each batch is written alone, in order; a batch whose own write
    /// fails ends its session (`internal`).
    public static func receive<W: SyncWriter>(
        _ messages: [(session: SyncSession, bytes: [UInt8])], writingWith writer: W
    ) -> [(actions: [SyncAction], writer: PrewrittenWriter<W>)] {
        var received = [[SyncAction]]()
        var parts = [IngestPart]()
        var partsOf = [ObjectIdentifier: [Int]]()
        for (session, bytes) in messages {
            let actions = session.receive(bytes)
            for case .ingest(let batch) in actions where batch.snapshot == nil {
                partsOf[ObjectIdentifier(session), default: []].append(parts.count)
                parts.append(IngestPart(receipts: batch.receipts, envelopes: batch.envelopes, from: batch.from))
            }
            received.append(actions)
        }
        var results = [Result<IngestReport, any Error>]()
        if !parts.isEmpty {
            do { results = try writer.ingest(parts: parts).map { .success($0) } } catch {
                // One write too large for what is left (a full disk): each batch alone, so the
                // ones that fit are kept, as they were when each message was its own write.
                results =
                    parts.count == 1
                    ? [.failure(error)] : parts.map { part in Result { try writer.ingest(parts: [part])[0] } }
            }
        }
        var writers = [ObjectIdentifier: PrewrittenWriter<W>]()
        return zip(messages, received).map { message, actions in
            let id = ObjectIdentifier(message.session)
            if writers[id] == nil {
                writers[id] = PrewrittenWriter(writer, written: (partsOf[id] ?? []).map { results[$0] })
            }
            return (actions, writers[id]!)
        }
    }
}

/// One session's writer after `SyncSession.receive(_:writingWith:)`: answers its `.ingest`
/// actions with the reports of the batches already written, in order; a batch handed out after
/// those (by a message that waited for them), snapshots and vectors go to the writer beneath.
public final class PrewrittenWriter<Base: SyncWriter>: SyncWriter {
    let base: Base
    var written: ArraySlice<Result<IngestReport, any Error>>

    init(_ base: Base, written: [Result<IngestReport, any Error>]) {
        self.base = base
        self.written = written[...]
    }

    /// The next report already written, else an ingest by the writer beneath.
    public func ingest(receipts: [Receipt], envelopes: [Envelope], from peer: DeviceID?) throws -> IngestReport {
        if let report = written.popFirst() { return try report.get() }
        return try base.ingest(receipts: receipts, envelopes: envelopes, from: peer)
    }

    /// Written by the writer beneath.
    public func ingest(parts: [IngestPart]) throws -> [IngestReport] { try base.ingest(parts: parts) }

    /// Installed by the writer beneath.
    public func installSnapshot(
        _ bundle: SnapshotBundle, from sender: IdentityID, device: DeviceID?, trustedForBootstrap: Bool
    ) throws -> IngestReport {
        try base.installSnapshot(bundle, from: sender, device: device, trustedForBootstrap: trustedForBootstrap)
    }

    /// Recorded by the writer beneath.
    public func recordPeerVector(
        peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64]
    )
        throws
    {
        try base.recordPeerVector(peer: peer, group: group, committed: committed, authors: authors)
    }
}

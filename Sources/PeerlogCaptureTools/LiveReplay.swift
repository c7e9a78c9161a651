import PeerlogCapture
import PeerlogModel
import PeerlogSync

/// `peerlog replay FILE --to HOST:PORT`, the protocol part (pure; the CLI does the socket).
/// It speaks just enough of §15 to re-send recorded batches: hello offering the batches'
/// groups, then each recorded `receipts` / `envelopes` / `commits` batch in order, once the
/// peer has accepted its group (sent its vector) and granted credit. It never sends a vector,
/// so the peer sends it nothing back but credit, vectors and requests; requests are answered
/// with `done` (a replayer serves nothing).
package final class LiveReplayDriver {
    /// One recorded batch (`receipts`, `envelopes` or `commits`) to re-send.
    package struct Batch: Sendable {
        /// Microseconds since the Unix epoch, when it was recorded.
        package let time: UInt64
        /// The batch's group.
        package let group: GroupID
        /// The batch as recorded.
        package let message: SyncMessage
    }

    /// Why `receive` ended the replay: the peer sent an undecodable message, no common version, an `error` or
    /// `unshared`.
    package enum Failure: Error, CustomStringConvertible {
        case peer(String)
        /// The reason, as a sentence.
        package var description: String {
            switch self {
            case .peer(let s): s
            }
        }
    }

    /// The batches to send, in recorded order.
    package let batches: [Batch]
    /// The batches' groups in order of first appearance; our hello offers them.
    package let groups: [GroupID]
    /// Batches handed out by `next()` so far (the index of the next one).
    package private(set) var sent = 0
    /// Receipts the peer's sequencer refused (a replay into a relay, say), with its reasons.
    package private(set) var refusals: [RefusedReceipt] = []
    /// Receipts and envelopes in the messages handed out so far.
    package private(set) var itemsSent = 0
    private var credit: UInt64 = 0
    private var peerInitialCredit: UInt64?
    private var peerHello = false
    private var peerSendsCommits = false
    private var accepted = Set<GroupID>()
    private let limits = SyncLimits()

    /// The recorded batches of `connection` in `direction` (default: what its peer sent us).
    package init(capture: CaptureFile, connection: UInt64, direction: CaptureRecord.Direction = .inbound) throws {
        if capture.records.contains(where: \.bodiesOmitted) {
            throw CaptureError(
                .notReplayable, offset: nil, "the capture was made with bodies omitted: its receipts cannot be replayed"
            )
        }
        var batches = [Batch]()
        for r in capture.records where r.connection == connection && r.kind == .message && r.direction == direction {
            guard let m = try? SyncMessage.decode(r.data, limits: SyncLimits()) else { continue }
            switch m {
            case .receipts(let g, _), .envelopes(let g, _), .commits(let g, _, _):
                batches.append(Batch(time: r.time, group: g, message: m))
            default: break
            }
        }
        guard !batches.isEmpty else {
            throw CaptureError(
                .notReplayable, offset: nil, "connection \(connection) has no recorded receipts or envelopes to replay")
        }
        self.batches = batches
        var seen = Set<GroupID>()
        groups = batches.compactMap { seen.insert($0.group).inserted ? $0.group : nil }
    }

    /// Our hello and initial credit.
    package func start() -> [[UInt8]] {
        [
            SyncMessage.hello(versions: SyncSession.versions, capabilities: [], groups: groups).encoded(),
            SyncMessage.credit(limits.initialCredit).encoded(),
        ]
    }

    /// Handles one message from the peer; returns what to send back.
    package func receive(_ bytes: [UInt8]) throws -> [[UInt8]] {
        let m: SyncMessage
        do { m = try SyncMessage.decode(bytes, limits: limits) } catch {
            throw Failure.peer("peer sent an undecodable message: \(error)")
        }
        switch m {
        case .hello(let versions, let capabilities, _):
            guard versions.contains(1) else { throw Failure.peer("peer speaks no version we know (\(versions))") }
            peerHello = true
            peerSendsCommits = capabilities.contains(SyncSession.commitsCapability)
        case .credit(let n):
            if peerInitialCredit == nil { peerInitialCredit = n }
            credit += n
        case .vector(let g, _, _):
            accepted.insert(g)
        case .request(let g, let id, _):
            return [SyncMessage.done(group: g, id: id).encoded()]
        case .receipts, .envelopes, .commits, .snapshot:
            // not expected (we never sent a vector); keep the peer's credit whole
            return [SyncMessage.credit(1).encoded()]
        case .error(let code, let message):
            throw Failure.peer("peer closed with error \(code): \(message)")
        case .refused(_, let items):
            refusals += items
        case .unshared(let g, let reason):
            throw Failure.peer("peer stopped syncing group \(g): \(reason)")
        case .caughtUp, .done, .unknown, .election, .revocations, .ping, .blob:
            break
        }
        return []
    }

    /// Every batch has been handed out (not necessarily ingested: see `acknowledged`).
    package var done: Bool { sent == batches.count }

    /// All sent and every batch acknowledged (the peer's credit is back to its initial grant).
    package var acknowledged: Bool { done && peerInitialCredit.map { credit >= $0 } == true }

    /// The next batch, if the peer may take it now; nil while waiting for hello, the group's
    /// acceptance or credit. Each returned message costs one credit.
    package func next() -> [[UInt8]]? {
        guard sent < batches.count, peerHello else { return nil }
        let b = batches[sent]
        guard accepted.contains(b.group) else { return nil }
        var out = [SyncMessage]()
        if case .commits(let g, let receipts, let envelopes) = b.message, !peerSendsCommits {
            if !receipts.isEmpty { out.append(.receipts(group: g, items: receipts)) }
            if !envelopes.isEmpty { out.append(.envelopes(group: g, items: envelopes)) }
        } else {
            out.append(b.message)
        }
        guard credit >= UInt64(out.count) else { return nil }
        credit -= UInt64(out.count)
        sent += 1
        itemsSent += out.reduce(0) { n, m in
            switch m {
            case .receipts(_, let items), .envelopes(_, let items): n + items.count
            case .commits(_, let r, let e): n + r.count + e.count
            default: n
            }
        }
        return out.map { $0.encoded() }
    }

    /// Groups the peer has not accepted (yet).
    package var unaccepted: [GroupID] { groups.filter { !accepted.contains($0) } }
}

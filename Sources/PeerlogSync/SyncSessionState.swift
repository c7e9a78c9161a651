import PeerlogEngine
import PeerlogModel

/// What the peer is believed to hold of a group: its vector, raised by everything that went
/// either way. Only ever raised: the transport is reliable and ordered within a session.
struct Knowledge {
    var committed: UInt64 = 0
    var authors: [DeviceID: UInt64] = [:]

    subscript(author: DeviceID) -> UInt64 { authors[author] ?? 0 }

    /// Counters are contiguous per author, so only the next counter raises the mark.
    mutating func hold(_ author: DeviceID, _ counter: UInt64) {
        if counter == self[author] + 1 { authors[author] = counter }
    }

    /// Seqs `from...to` reached the peer: contiguous with its mark, they raise it.
    mutating func commit(from: UInt64, to: UInt64) {
        if from <= committed + 1, to > committed { committed = to }
    }

    mutating func merge(committed c: UInt64, authors list: [AuthorCounter]) {
        committed = max(committed, c)
        for a in list where a.counter > self[a.author] { authors[a.author] = a.counter }
    }
}

/// A queued outgoing message and what it tells the peer once it leaves.
struct Outgoing {
    let bytes: [UInt8]
    let group: GroupID
    /// "receipts"/"envelopes": needs one credit.
    let isBatch: Bool
    /// Part of a request's answer (kept when live batches are dropped).
    let answer: Bool
    var items = 0
    var held: [AuthorCounter] = []
    var committed: ClosedRange<UInt64>? = nil
    /// A "caught_up": if dropped, it is owed again.
    var caughtUp = false
    /// The "unshared" that ends a group with this peer once what was queued before it has left
    /// (`SyncSession.membershipChanged` sends a removed member its removal first).
    var withdraws: String? = nil
}

/// An accepted request being answered batch by batch.
struct Answer {
    let id: UInt64
    let what: SyncRequest
    /// Next seq or counter, or index into the CID list.
    var cursor: UInt64
}

/// Items of one batch message, within `maxBatchItems` and `maxBatchBytes` (at least one item).
struct Batch {
    let maxItems: Int
    let maxBytes: Int
    var items: [[UInt8]] = []
    var bytes = 0

    /// A first item always fits (every item is below the batch limit on its own).
    func fits(_ n: Int) -> Bool { (items.isEmpty && bytes == 0) || (items.count < maxItems && bytes + n <= maxBytes) }
    var isFull: Bool { items.count >= maxItems }
    mutating func add(_ item: [UInt8], bytes n: Int? = nil) {
        items.append(item)
        bytes += n ?? item.count
    }
    /// Counts bytes that travel in the same message without being items (a `commits` batch's envelopes).
    mutating func reserve(_ n: Int) { bytes += n }
}

/// One accepted group: we sent our vector, so the peer may send items for it.
struct GroupSync {
    /// We send the peer what it lacks: it is a member in our view (§15.2.3). Off while we only
    /// receive a group the peer offered (we lack it, or are not a member in our copy yet).
    var serves = true
    var peerVectorKnown = false
    /// As of what we have generated (queued or sent).
    var planned = Knowledge()
    /// As of what has left the queue, or what the peer told or sent us.
    var sent = Knowledge()
    /// Something may be left to send (peer vector, local change, ingest).
    var dirty = false
    /// A "caught_up" is owed once nothing is left for the peer's latest vector.
    var owesCaughtUp = false
    var answers: [Answer] = []
    var localCommitted: UInt64 = 0
    var sentTraffic = SyncTraffic()
    var receivedTraffic = SyncTraffic()
    var caughtUpSent = false
    var caughtUpReceived = false
    /// A snapshot went to the peer (at most one per session and group): nothing more is generated
    /// for the group until the peer's next vector says what it holds now (§23.3).
    var snapshotSent = false
    /// A snapshot came from the peer: it may send one per session and group, answering our vector.
    var snapshotReceived = false
    /// A snapshot sent as a blob (§23.3), waiting for the node to fetch the blob: its ingest
    /// starts with `SyncSession.snapshotBlobFetched(group:bytes:)`.
    var deferredSnapshot: (pending: PendingIngest, ingest: SyncIngest)?
    var awaitingVector = false
    /// When (a tick's `now`) the peer last showed it is answering this group's requests: a
    /// batch of the group or a `done`.
    var answeredAt: UInt64 = 0

    /// An "unshared" is queued after this group's last batches: nothing more is generated.
    var closing = false

    var hasWork: Bool {
        !closing && (!answers.isEmpty || (serves && peerVectorKnown && !awaitingVector && (dirty || owesCaughtUp)))
    }
}

/// A batch handed to the driver to ingest (`SyncAction.ingest`), with what the session needs
/// once the outcome comes back through `ingested(_:)`.
struct PendingIngest {
    let group: GroupID
    let receipts: [Receipt]
    /// The seqs of the batch's first and last envelope (nil: none).
    let firstEnvelopeSeq: UInt64?
    let lastEnvelopeSeq: UInt64?
    /// Receipt and envelope items, and the message's size, for the traffic counters.
    let items: Int
    let size: Int
    /// A `snapshot` message: the receiver answers with its vector once it is installed or refused.
    var snapshot = false
}

/// A request in flight to the peer: one per (group, range) at a time.
struct RequestKey: Hashable {
    let group: GroupID
    let what: SyncRequest
}

/// A request we sent, until its `done` (or its timeout, §15.2.7).
struct InFlightRequest {
    let id: UInt64
    /// Sends of this (group, selector) so far, this one included.
    let attempt: Int
    /// The tick it was sent at.
    let sentAt: UInt64
}

/// A failure that ends the session with an "error" message.
struct SyncFailure: Error {
    let code: String
    let message: String
    init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }
}

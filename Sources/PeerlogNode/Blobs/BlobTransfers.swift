import Dispatch
import Logging
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import Synchronization

/// The node's blob traffic (docs/PROTOCOL.md §24.3), on a queue of its own so chunk reads,
/// hashing and writes never hold up the hub's receipts. It serves what peers ask for (only blobs
/// put or fetched for a group the asking session syncs), and fetches what this device wants: every
/// blob a current value references up to `prefetchBytes`, and any blob a reader asked for (a row
/// in `blobs` not yet whole). Each chunk is checked against the blob id before it is written; a
/// peer that sends a wrong one is logged with its device as evidence and not asked for that blob
/// again, and the chunk is asked of another peer.
final class BlobTransfers: @unchecked Sendable {
    /// A connection whose session syncs groups, as the hub last published it.
    struct Peer: Sendable {
        let link: ConnectionRef
        let groups: Set<GroupID>
        let servesBlobs: Bool
    }

    /// One blob being fetched.
    struct Fetch {
        var id: BlobID
        var layout: BlobLayout
        var group: GroupID
        /// Request id → (connection, chunk indices or nil for the hashes, sent at).
        var inFlight: [UInt64: (peer: UInt64, chunks: [Int]?, at: UInt64)] = [:]
        /// Peers that sent something wrong or said they lack the blob: not asked again.
        var excluded: Set<UInt64> = []
        var nextPeer = 0
        /// After a chunk could not be written (a full disk): asked for again from then on.
        var pausedUntil: UInt64?
    }

    /// What the node keeps (docs/PROTOCOL.md §24.6), applied once a minute.
    struct Keeping: Sendable {
        var cacheBytes = BlobRetention.cacheBytes
        var graceMs = BlobRetention.graceMs
        /// As a relay, the most blob bytes held (`NodeConfiguration.relayBlobQuotaBytes`).
        var relayQuotaBytes: UInt64 = 64 << 30
    }

    /// Blobs of at most this many bytes are fetched as soon as a value references them.
    static let prefetchBytes: UInt64 = 64 << 20
    /// Chunks one request asks for, and chunks in flight per blob (the window: what a receiver
    /// killed mid-transfer is sent again, 8 MiB; far above a LAN's or a relay's bandwidth-delay
    /// product, so it does not bound the rate).
    static let chunksPerGet = 4
    static let window = 8
    /// Blobs fetched at once.
    static let concurrentFetches = 4
    /// Chunk bytes one connection may have queued to send (48 MiB: an honest asker keeps at
    /// most `window` chunks of `concurrentFetches` blobs in flight); a request past it is
    /// answered `blob_missing`.
    static let maxBacklogBytes = 48 << 20
    /// A request unanswered this long is asked of another peer (ms).
    static let requestTimeoutMs: UInt64 = 15_000
    /// How long a fetch waits after a chunk could not be written (ms).
    static let pauseAfterWriteErrorMs: UInt64 = 5_000

    let replica: Replica
    let logger: Logger
    let clock: @Sendable () -> UInt64
    let keeping: Keeping
    /// Called (on the transfers' queue) when a fetch completes: the hub's snapshots wait on it.
    var onWhole: (@Sendable () -> Void)?
    private let queue = DispatchQueue(label: "peerlog.node.blobs")
    // Queue-confined.
    private var peers: [UInt64: Peer] = [:]
    private var fetches: [BlobID: Fetch] = [:]
    private var nextID: UInt64 = 1
    private var lastScan: UInt64 = 0
    /// When the relays were last told of the blobs held, and over which connections.
    private var lastAnnounce: UInt64 = 0
    private var announcedConnections: Set<UInt64> = []
    /// Something to tell the relays may have changed (a blob became whole, values arrived, a
    /// group's relay changed): announce at the next scan rather than within the minute.
    private var announceDue = true
    /// Groups sequenced by another device's relay, and that relay (kept by the hub, which re-reads
    /// only groups whose group operations changed: `relaysUpdated`).
    private var relays: [GroupID: DeviceID] = [:]
    /// Blobs told to each relay connection.
    private var announcements: [UInt64: Set<BlobID>] = [:]
    private var publishedAt: UInt64 = 0
    private var keptAt: UInt64 = 0
    /// When each blob served lately was last marked used (at most every 5 s), so the cache and
    /// collection leave a blob alone while peers fetch it.
    private var servedAt: [BlobID: UInt64] = [:]
    /// The blob bytes held, as `keep` last counted them (status).
    private var heldBytes: (whole: UInt64, cached: UInt64) = (0, 0)
    /// Blobs refused for the relay quota (logged once each).
    private var overQuota: Set<BlobID> = []
    /// A fetch completed since: count them again at the next status.
    private var heldChanged = true
    /// Bytes of chunks written and served since start (status).
    private(set) var received: UInt64 = 0
    private(set) var served: UInt64 = 0
    private let published = Mutex(
        BlobsStatus(
            fetching: [], receivedBytes: 0, servedBytes: 0, heldBytes: 0, cachedBytes: 0,
            cacheLimitBytes: BlobRetention.cacheBytes))

    init(replica: Replica, logger: Logger, clock: @escaping @Sendable () -> UInt64, keeping: Keeping = .init()) {
        self.replica = replica
        self.logger = logger
        self.clock = clock
        self.keeping = keeping
    }

    /// The connections and the groups their sessions sync now (from the hub, on its ticks).
    func publish(_ peers: [UInt64: Peer]) {
        queue.async { [self] in
            take(peers)
            pump()
        }
    }

    /// Groups whose relay changed (nil: none, or no longer held), from the hub's membership.
    func relaysUpdated(_ changes: [GroupID: DeviceID?]) {
        guard !changes.isEmpty else { return }
        queue.async { [self] in
            for (group, relay) in changes { relays[group] = relay }
            announceDue = true
        }
    }

    /// Requests in flight to a connection that is gone are taken back.
    private func take(_ peers: [UInt64: Peer]) {
        self.peers = peers
        for (id, f) in fetches {
            fetches[id]?.inFlight = f.inFlight.filter { peers[$0.value.peer] != nil }
        }
    }

    /// A blob message from the peer on connection `id`.
    /// `peer` is the connection as the hub sees it now: a request right after the session
    /// opened is answered even before the next tick publishes the session's groups.
    func received(_ message: BlobMessage, from id: UInt64, peer: Peer) {
        queue.async { [self] in
            peers[id] = peer
            switch message {
            case .get(let group, let blob, let request, let from, let count):
                serve(group: group, blob: blob, request: request, from: from, count: count, to: id)
            case .hashes(let blob, let request, let hashes):
                // Only the peer asked answers a request: another cannot cancel it.
                guard var f = fetches[blob], f.inFlight[request]?.peer == id else { return }
                f.inFlight[request] = nil
                if (try? replica.acceptBlobHashes(blob, hashes)) != true {
                    exclude(id, from: &f, "sent chunk hashes that do not hash to blob \(blob)")
                }
                fetches[blob] = f
            case .chunk(let blob, let request, let index, let data):
                chunk(blob: blob, request: request, index: Int(clamping: index), data: data, from: id)
            case .have(let group, let blob, let layout):
                announced(group: group, blob: blob, layout: layout, from: id)
            case .missing(let blob, let request, let reason):
                guard var f = fetches[blob], f.inFlight[request]?.peer == id else { return }
                f.inFlight[request] = nil
                f.excluded.insert(id)
                fetches[blob] = f
                logger.debug("\(peers[id]?.link.peer.device.short ?? "a peer") does not serve blob \(blob): \(reason)")
            }
            pump()
        }
    }

    private func serve(group: GroupID, blob: BlobID, request: UInt64, from: UInt64, count: UInt64, to id: UInt64) {
        guard let peer = peers[id] else { return }
        func missing(_ why: String) { send(.missing(blob: blob, id: request, reason: why), to: peer) }
        guard peer.groups.contains(group) else { return missing("group \(group) is not synced on this connection") }
        guard (try? replica.blobServes(blob, in: group)) == true, let stored = try? replica.storedBlob(blob) else {
            return missing("not held for group \(group)")
        }
        if count == 0 {
            guard let hashes = stored.hashes else { return missing("its chunk hashes are not held yet") }
            return send(.hashes(blob: blob, id: request, hashes: hashes), to: peer)
        }
        guard let hashes = stored.hashes else { return missing("its chunk hashes are not held yet") }
        guard peer.link.bulkBacklog.bytes.load(ordering: .relaxed) < Self.maxBacklogBytes else {
            return missing("over \(Self.maxBacklogBytes) bytes of chunks are queued for this connection already")
        }
        let now = clock()
        if now >= servedAt[blob, default: 0] &+ 5_000 {
            servedAt[blob] = now
            replica.touchBlob(blob)
        }
        let chunks = UInt64(stored.layout.chunkCount)
        guard from < chunks, count <= chunks - from else {
            return missing("chunks \(from) to \(from) + \(count) - 1 are outside the blob's \(chunks)")
        }
        for index in from..<(from + count) {
            guard let data = try? replica.blobChunk(of: stored, index: Int(index)) else {
                return missing("chunk \(index) is not held")
            }
            // Checked before it is served too: a damaged file is never passed on.
            guard stored.layout.chunk(data, index: Int(index), matches: hashes) else {
                logger.error(
                    "chunk \(index) of blob \(blob) in \(replica.blobFiles.directory) does not match its hash: not served"
                )
                return missing("chunk \(index) is damaged here")
            }
            served += UInt64(data.count)
            send(.chunk(blob: blob, id: request, index: index, data: data), to: peer)
        }
    }

    private func chunk(blob: BlobID, request: UInt64, index: Int, data: [UInt8], from id: UInt64) {
        guard var f = fetches[blob], let asked = f.inFlight[request], asked.peer == id,
            asked.chunks?.contains(index) == true
        else { return }
        let rest = asked.chunks!.filter { $0 != index }
        f.inFlight[request] = rest.isEmpty ? nil : (asked.peer, rest, asked.at)
        do {
            switch try replica.acceptBlobChunk(blob, index: index, bytes: data) {
            case .corrupt:
                f.inFlight[request] = nil
                exclude(id, from: &f, "sent chunk \(index) of blob \(blob), which does not match its hash")
            case .completed:
                received += UInt64(data.count)
                fetches[blob] = nil
                heldChanged = true
                announceDue = true
                onWhole?()
                logger.info("blob \(blob) of group \(f.group) is whole (\(f.layout.size) bytes)")
                return
            case .written:
                received += UInt64(data.count)
            case .unneeded: break
            }
        } catch {
            // A full disk (or another write error): nothing half-written counts; the chunks in
            // flight are dropped and the fetch waits before it asks again, so it does not spin.
            if f.pausedUntil == nil {
                logger.error(
                    "cannot write chunk \(index) of blob \(blob): \(error); pausing its fetch for \(Self.pauseAfterWriteErrorMs / 1000) s"
                )
            }
            f.inFlight = [:]
            f.pausedUntil = clock() &+ Self.pauseAfterWriteErrorMs
        }
        fetches[blob] = f
    }

    private func exclude(_ id: UInt64, from f: inout Fetch, _ what: String) {
        f.excluded.insert(id)
        let peer = peers[id]?.link.peer
        logger.warning(
            "evidence: peer \(peer?.device.string ?? "?") (identity \(peer?.identity.string ?? "?")) \(what); asking another peer"
        )
    }

    /// Chunks and hashes (the bulk) go behind receipts, vectors and elections on the connection.
    private func send(_ m: BlobMessage, to peer: Peer) {
        let bytes = SyncMessage.blob(m).encoded()
        switch m {
        case .chunk, .hashes: peer.link.sendBulk(bytes)
        default: peer.link.send(bytes)
        }
    }

    /// Picks up new wants (at most every 250 ms), asks for hashes and chunks within the window,
    /// and takes back requests unanswered for `requestTimeoutMs`.
    func pump() {
        let now = clock()
        if lastScan == 0 || now >= lastScan &+ 250 {
            lastScan = now
            scan()
        }
        for blob in fetches.keys.sorted() { advance(blob, now: now) }
        if keptAt == 0 || now >= keptAt &+ 60_000 {
            keptAt = now
            keep()
        }
        if now >= publishedAt &+ 200 || fetches.isEmpty {
            publishedAt = now
            publishStatus()
        }
    }

    func tick() { queue.async { [self] in pump() } }

    /// Receipts were ingested: values that reference blobs may have arrived; look now rather
    /// than at the next 250 ms scan, with `peers` the connections as they are now.
    func valuesArrived(peers: [UInt64: Peer]) {
        queue.async { [self] in
            take(peers)
            lastScan = 0
            heldChanged = true
            announceDue = true
            pump()
        }
    }

    private func scan() {
        // The relays hear of the blobs held when something changed, else once a minute: each
        // relay group costs a read, so not on every scan.
        let connections = Set(peers.keys)
        if announceDue || connections != announcedConnections || clock() >= lastAnnounce &+ 60_000 {
            announceDue = false
            lastAnnounce = clock()
            announcedConnections = connections
            announceToRelays()
        }
        guard fetches.count < Self.concurrentFetches else { return }
        do {
            // Values under the prefetch size: start fetching them (a row in `blobs`).
            for use in try replica.blobsWanted(limit: 1_000) where use.reference.layout.size <= Self.prefetchBytes {
                try replica.beginBlob(use.reference, for: use.group)
            }
            // Every blob not yet whole: prefetched, asked for by a reader, announced to a relay.
            for (blob, group) in try replica.incompleteBlobs(limit: 100)
            where fetches[blob.id] == nil && fetches.count < Self.concurrentFetches {
                fetches[blob.id] = Fetch(id: blob.id, layout: blob.layout, group: group)
            }
        } catch {
            logger.error("cannot read the blobs wanted: \(error)")
        }
    }

    /// Tells each connected relay of the whole blobs held for the groups it sequences, once per
    /// connection: it cannot read the values that reference them.
    private func announceToRelays() {
        for (id, peer) in peers where peer.servesBlobs {
            for (group, relay) in relays where relay == peer.link.peer.device && peer.groups.contains(group) {
                guard let held = try? replica.wholeBlobs(for: group) else { continue }
                for blob in held where !announcements[id, default: []].contains(blob.id) {
                    announcements[id, default: []].insert(blob.id)
                    send(.have(group: group, blob: blob.id, layout: blob.layout), to: peer)
                }
            }
        }
        announcements = announcements.filter { peers[$0.key] != nil }
    }

    /// A member tells this relay it holds a blob of a group the relay sequences: fetch and keep it.
    private func announced(group: GroupID, blob: BlobID, layout: BlobLayout, from id: UInt64) {
        guard peers[id]?.groups.contains(group) == true, (try? replica.relaysHere(group)) == true else { return }
        do {
            if try replica.storedBlob(blob) == nil {
                let held = try replica.blobBytesHeld().whole
                guard held + layout.size <= keeping.relayQuotaBytes else {
                    if overQuota.insert(blob).inserted {
                        logger.warning(
                            "not keeping blob \(blob) of group \(group) (\(layout.size) bytes): this relay holds \(held) bytes of blobs and its quota is \(keeping.relayQuotaBytes); members serve it themselves"
                        )
                    }
                    return
                }
                try replica.beginBlob(blob, layout: layout, for: group)
            } else {
                try replica.addBlobGroup(blob, group)
            }
        } catch {
            logger.error("cannot start fetching blob \(blob) of group \(group): \(error)")
        }
    }

    private func advance(_ blob: BlobID, now: UInt64) {
        guard var f = fetches[blob], let stored = try? replica.storedBlob(blob) else { return }
        if stored.complete {
            fetches[blob] = nil
            return
        }
        if let until = f.pausedUntil {
            guard now >= until else { return }
            f.pausedUntil = nil
            logger.info("fetching blob \(blob) again after a write error")
        }
        f.inFlight = f.inFlight.filter { now < $0.value.at &+ Self.requestTimeoutMs }
        let candidates = peers.filter { $0.value.servesBlobs && $0.value.groups.contains(f.group) }.keys.sorted()
            .filter { !f.excluded.contains($0) }
        defer { fetches[blob] = f }
        guard !candidates.isEmpty else { return }
        func nextPeer() -> UInt64 {
            f.nextPeer = (f.nextPeer + 1) % candidates.count
            return candidates[f.nextPeer]
        }
        guard stored.hashes != nil else {
            if !f.inFlight.values.contains(where: { $0.chunks == nil }) {
                let peer = nextPeer()
                f.inFlight[nextID] = (peer, nil, now)
                send(.get(group: f.group, blob: blob, id: nextID, from: 0, count: 0), to: peers[peer]!)
                nextID += 1
            }
            return
        }
        let asked = Set(f.inFlight.values.flatMap { $0.chunks ?? [] })
        var room = Self.window - asked.count
        var index = 0
        while room > 0, index < stored.layout.chunkCount {
            var run: [Int] = []
            while index < stored.layout.chunkCount, run.count < min(room, Self.chunksPerGet) {
                if !stored.holds(chunk: index) && !asked.contains(index) {
                    run.append(index)
                } else if !run.isEmpty {
                    break
                }
                index += 1
            }
            guard let first = run.first else { break }
            let peer = nextPeer()
            f.inFlight[nextID] = (peer, run, now)
            send(
                .get(group: f.group, blob: blob, id: nextID, from: UInt64(first), count: UInt64(run.count)),
                to: peers[peer]!)
            nextID += 1
            room -= run.count
        }
    }

    /// Deletes blobs no value has referenced for the grace period and evicts fetched ones over
    /// the cache size, least recently used first (never one being fetched or served).
    private func keep() {
        servedAt = servedAt.filter { clock() < $0.value &+ 60_000 }
        do {
            let gone = try replica.collectBlobs(graceMs: keeping.graceMs)
            if !gone.isEmpty {
                logger.info(
                    "deleted \(gone.count) blob(s), \(gone.reduce(0) { $0 + $1.layout.size }) bytes, that no value has referenced for \(keeping.graceMs / 1_000) s"
                )
            }
            let evicted = try replica.evictBlobs(toFit: keeping.cacheBytes)
            if !evicted.isEmpty {
                logger.info(
                    "evicted \(evicted.count) fetched blob(s), \(evicted.reduce(0) { $0 + $1.layout.size }) bytes, least recently used first: the cache holds at most \(keeping.cacheBytes) bytes"
                )
            }
            heldBytes = try replica.blobBytesHeld()
        } catch {
            logger.error("cannot collect or evict blobs: \(error)")
        }
    }

    /// The transfers as `pump` last left them (read without waiting for the queue).
    func status() -> BlobsStatus { published.withLock { $0 } }

    private func publishStatus() {
        let fetching = fetches.values.sorted { $0.id < $1.id }.map { f in
            BlobFetchStatus(
                blob: f.id.string, group: f.group.string, size: f.layout.size,
                heldBytes: (try? replica.storedBlob(f.id))??.heldBytes ?? 0, requests: f.inFlight.count)
        }
        if heldChanged {
            heldChanged = false
            heldBytes = (try? replica.blobBytesHeld()) ?? heldBytes
        }
        let status = BlobsStatus(
            fetching: fetching, receivedBytes: received, servedBytes: served, heldBytes: heldBytes.whole,
            cachedBytes: heldBytes.cached, cacheLimitBytes: keeping.cacheBytes)
        published.withLock { $0 = status }
    }
}

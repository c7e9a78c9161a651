import PeerlogCrypto
import PeerlogModel
import PeerlogStore

/// What a replica holds of blobs (docs/PROTOCOL.md §24): storing a local file as one, taking in
/// the hashes and chunks a peer sends after checking each against the blob id, and reading one
/// back. The files live beside the store (`BlobFiles`), the bookkeeping in it.
extension Replica {
    /// This home's blob files.
    package var blobFiles: BlobFiles {
        BlobFiles(besideStoreAt: store.path, memoryKey: ObjectIdentifier(store).hashValue)
    }

    /// Stores the file at `source` ("-": standard input) as a blob for `group`, sealed when the
    /// group is encrypted, and returns the reference to put as a value. The same bytes stored
    /// twice in a plaintext group are one blob; in an encrypted group too, within one epoch
    /// (`blobKey`).
    package func storeBlob(
        from source: String, in group: GroupID, progress: (UInt64) -> Void = { _ in }
    ) throws -> BlobReference {
        guard let state = try state(of: group, view: .tentative) else {
            throw ReplicaError(.groupNotFound, "this device holds no group \(group)")
        }
        let key = try blobKey(for: source, in: group, state: state)
        let stored = try blobFiles.store(from: source, key: key, progress: progress)
        try store.write { db in
            try db.addLocalBlob(stored.id, layout: stored.layout, hashes: stored.hashes, now: clock())
            try db.addBlobGroup(stored.id, group)
        }
        return try BlobReference(id: stored.id, layout: stored.layout, key: key)
    }

    /// Stores an encoded snapshot of `group` as a blob to send (docs/PROTOCOL.md §23.3): sealed
    /// in an encrypted group under a key derived from the bytes and the newest epoch key (so
    /// every peer that bootstraps from it is served one blob), served to the group's members,
    /// never announced to a relay, collected like any blob no value references.
    func storeSnapshotBlob(_ encoded: [UInt8], in group: GroupID) throws -> BlobReference {
        guard let state = try state(of: group, view: .committed) else {
            throw ReplicaError(.groupNotFound, "this device holds no group \(group)")
        }
        let key =
            try newestEpochKey(group, state).map { epoch in
                BlobFiles.convergentKey(of: encoded, secret: epoch.blobSecret)
            } ?? (state.encryption == nil ? nil : SecureBytes(randomCount: ChaChaPoly.keyLength))
        let stored = try blobFiles.store(bytes: encoded, key: key)
        try store.write { db in
            try db.addLocalBlob(stored.id, layout: stored.layout, hashes: stored.hashes, now: clock())
            try db.markSnapshotBlob(stored.id)
            try db.addBlobGroup(stored.id, group)
        }
        return try BlobReference(id: stored.id, layout: stored.layout, key: key)
    }

    /// The whole plaintext of a blob held whole (a snapshot's bytes), at most `maxBytes`.
    package func blobBytes(_ reference: BlobReference, maxBytes: Int) throws -> [UInt8] {
        guard reference.layout.size <= UInt64(maxBytes) else {
            throw ReplicaError(
                .blobUnreadable, "blob \(reference.id) is \(reference.layout.size) bytes, over the \(maxBytes) expected"
            )
        }
        guard try storedBlob(reference.id)?.complete == true else {
            throw ReplicaError(.blobNotHeld, "blob \(reference.id) is not held whole here")
        }
        var out = [UInt8]()
        out.reserveCapacity(Int(reference.layout.size))
        for index in 0..<reference.layout.chunkCount { out += try blobPlaintext(reference, chunk: index) }
        return out
    }

    /// The key a blob of `source` is sealed under in `group`; nil in a plaintext group. A file
    /// gets a key derived from its bytes and the newest epoch key held (docs/PROTOCOL.md §24.1),
    /// so members that put the same bytes in the same epoch make one blob; standard input (read
    /// once) and a device that holds no epoch key yet get a random one.
    func blobKey(for source: String, in group: GroupID, state: GroupState) throws -> SecureBytes? {
        guard state.encryption != nil else { return nil }
        guard source != "-", let epoch = try newestEpochKey(group, state) else {
            return SecureBytes(randomCount: ChaChaPoly.keyLength)
        }
        return try BlobFiles.convergentKey(of: source, secret: epoch.blobSecret)
    }

    /// The newest epoch key in use that this device holds for an encrypted group (what blob keys
    /// derive from); nil in a plaintext group or when none is held yet.
    private func newestEpochKey(_ group: GroupID, _ state: GroupState) throws -> EpochKey? {
        guard let encryption = state.encryption else { return nil }
        let held = try store.read { try KeyringStorage.keys(group: group, db: $0, local: local) }
        return encryption.validKeys.reversed().lazy.compactMap { held[$0] }.first
    }

    /// What this device holds of a blob, nil when nothing.
    package func storedBlob(_ id: BlobID) throws -> StoredBlob? { try store.read { try $0.blob(id) } }

    /// Every blob this device holds, whole or in part.
    package func storedBlobs() throws -> [StoredBlob] { try store.read { try $0.blobs() } }

    /// Current values that reference blobs this device does not hold whole.
    package func blobsWanted(limit: Int = 1_000) throws -> [BlobUse] {
        try store.read { try $0.blobsWanted(limit: limit) }
    }

    /// Bytes of the whole blobs held, and of those fetched from peers (the cache).
    package func blobBytesHeld() throws -> (whole: UInt64, cached: UInt64) {
        try store.read { (try $0.wholeBlobBytes(), try $0.cachedBlobBytes()) }
    }

    /// The blobs current values reference that this device has no record of (what a node
    /// would start to prefetch), in order.
    package func wantedBlobIDs() throws -> [BlobID] { try blobsWanted().map(\.reference.id).sorted() }

    /// Current values that reference `id`.
    package func blobUses(_ id: BlobID) throws -> [BlobUse] { try store.read { try $0.blobUses(id) } }

    /// Whether `id` may be served to the members of `group`: it was put or fetched for it.
    package func blobServes(_ id: BlobID, in group: GroupID) throws -> Bool {
        try store.read { try $0.blobServes(id, in: group) }
    }

    /// Starts fetching a blob for `group` (nothing when it is held already); once held it is
    /// served to the group's members.
    package func beginBlob(_ reference: BlobReference, for group: GroupID) throws {
        try beginBlob(reference.id, layout: reference.layout, for: group)
    }

    /// Starts fetching blob `id` of `layout` for `group` (a relay told of it by a member).
    package func beginBlob(_ id: BlobID, layout: BlobLayout, for group: GroupID) throws {
        try store.write { db in
            try db.addBlob(id, layout: layout, now: clock())
            try db.addBlobGroup(id, group)
        }
    }

    /// A reader asked for the blob: fetched for `group` when not held, also after an eviction.
    /// `snapshot`: it holds a snapshot a peer sent as a blob (never announced to a relay).
    package func wantBlob(_ reference: BlobReference, for group: GroupID, snapshot: Bool = false) throws {
        try store.write { db in
            try db.addBlob(reference.id, layout: reference.layout, now: clock())
            try db.unevictBlob(reference.id)
            if snapshot { try db.markSnapshotBlob(reference.id) }
            try db.addBlobGroup(reference.id, group)
        }
    }

    /// The blob was read now (best effort: a read-only store keeps the older time).
    package func touchBlob(_ id: BlobID) {
        try? store.write { try $0.touchBlob(id, now: clock()) }
    }

    /// Blobs not held whole, each with a group it is fetched for.
    package func incompleteBlobs(limit: Int = 1_000) throws -> [(blob: StoredBlob, group: GroupID)] {
        try store.read { try $0.incompleteBlobs(limit: limit) }
    }

    /// Whole blobs held for `group` (to tell its relay).
    package func wholeBlobs(for group: GroupID) throws -> [StoredBlob] {
        try store.read { try $0.wholeBlobs(for: group) }
    }

    /// Whether this device sequences `group` as its relay (it stores the group's blobs without
    /// reading them), in its committed state.
    package func relaysHere(_ group: GroupID) throws -> Bool {
        guard let state = try state(of: group, view: .committed), state.status == .active,
            case .relay(let key, _) = state.authority
        else { return false }
        return key == local.device
    }

    /// Takes a blob's chunk hashes from a peer when they hash, with the layout, to its id.
    package func acceptBlobHashes(_ id: BlobID, _ hashes: [UInt8]) throws -> Bool {
        guard let blob = try storedBlob(id) else { return false }
        guard hashes.count == blob.layout.chunkCount * 32, blob.layout.id(hashes: hashes) == id else { return false }
        try store.write { try $0.setBlobHashes(id, hashes) }
        return true
    }

    /// What became of a chunk a peer sent.
    package enum ChunkOutcome: Equatable, Sendable {
        /// Written; this many chunks are held now.
        case written(held: Int)
        /// Written, and it was the last: the blob is whole and readable.
        case completed
        /// Held already, or the blob is not being fetched: nothing written.
        case unneeded
        /// Its hash is not the one the blob's id fixes: nothing written.
        case corrupt
    }

    /// Checks chunk `index` of `id` against the blob's hashes and, when it matches, writes it.
    package func acceptBlobChunk(_ id: BlobID, index: Int, bytes: [UInt8]) throws -> ChunkOutcome {
        guard let blob = try storedBlob(id), let hashes = blob.hashes, !blob.complete, index >= 0,
            index < blob.layout.chunkCount
        else { return .unneeded }
        if blob.holds(chunk: index) { return .unneeded }
        guard blob.layout.chunk(bytes, index: index, matches: hashes) else { return .corrupt }
        try bytes.withUnsafeBytes {
            try blobFiles.writeChunk(
                $0, of: id, at: blob.layout.storedOffset(ofChunk: index), storedSize: blob.layout.storedSize)
        }
        let held = try store.write { try $0.markBlobChunk(id, index) }
        guard held == blob.layout.chunkCount else { return .written(held: held) }
        try blobFiles.finish(id)
        try store.write { db in
            try db.completeBlob(id)
            try db.touchBlob(id, now: clock())
            try Self.logBlobHeld(id, in: db.blobGroups(id), db: db, now: clock())
        }
        return .completed
    }

    /// A `blob` change-log row per group (docs/PROTOCOL.md §10.4): the values that reference
    /// the blob read now.
    static func logBlobHeld(_ id: BlobID, in groups: [GroupID], db: StoreDB, now: UInt64) throws {
        for g in groups {
            _ = try db.appendChange(ChangeLogRow(group: g, kind: ChangeLogKind.blob.rawValue, key: id.string, at: now))
        }
    }

    /// Takes a blob an import wrote and checked (`temporary` holds its stored bytes, `hashes`
    /// give its id): it becomes whole here, kept for `group`.
    package func adoptImportedBlob(
        _ id: BlobID, layout: BlobLayout, hashes: [UInt8], from temporary: String, group: GroupID?
    ) throws {
        try blobFiles.adopt(temporary, as: id)
        try store.write { db in
            // A fetch of it may have started, or it was evicted: it is whole now, and this device's.
            try db.addLocalBlob(id, layout: layout, hashes: hashes, now: clock())
            if let group {
                try db.addBlobGroup(id, group)
                try Self.logBlobHeld(id, in: [group], db: db, now: clock())
            }
        }
    }

    /// Records that the blob may be served to members of `group` (a fetch for it completed).
    package func addBlobGroup(_ id: BlobID, _ group: GroupID) throws {
        try store.write { try $0.addBlobGroup(id, group) }
    }

    /// Stored bytes of chunk `index` of a blob held (for a peer), nil when not held.
    package func blobChunk(_ id: BlobID, index: Int) throws -> [UInt8]? {
        guard let blob = try storedBlob(id) else { return nil }
        return try blobChunk(of: blob, index: index)
    }

    /// Stored bytes of chunk `index` of `blob` as already read from the store (a request for
    /// several chunks reads its row once), nil when not held.
    package func blobChunk(of blob: StoredBlob, index: Int) throws -> [UInt8]? {
        guard index >= 0, index < blob.layout.chunkCount, blob.holds(chunk: index) else { return nil }
        return try blobFiles.read(
            blob.id, at: blob.layout.storedOffset(ofChunk: index), count: blob.layout.storedBytes(ofChunk: index))
    }

    /// The plaintext of chunk `index` of a whole blob: opened with the reference's key.
    package func blobPlaintext(_ reference: BlobReference, chunk index: Int) throws -> [UInt8] {
        let layout = reference.layout
        let stored = try blobFiles.read(
            reference.id, at: layout.storedOffset(ofChunk: index), count: layout.storedBytes(ofChunk: index))
        guard let key = reference.key else { return stored }
        do {
            return try ChaChaPoly.open(stored, key: key, nonce: BlobLayout.nonce(ofChunk: index))
        } catch {
            throw ReplicaError(
                .blobUnreadable,
                "chunk \(index) of blob \(reference.id) does not open with the key its reference carries")
        }
    }

    /// Pins or unpins a blob held; false when none.
    package func pinBlob(_ id: BlobID, _ pinned: Bool) throws -> Bool {
        try store.write { try $0.setBlobPinned(id, pinned) }
    }

    /// Deletes the whole blobs that no value references, committed or tentative, since
    /// `graceMs` or longer, and that no pin keeps; returns them (docs/PROTOCOL.md §24.6). Never
    /// one being fetched, one put, read or fetched in the last `BlobRetention.inUseMs` (a write
    /// may be about to reference it), nor one kept for a group this device relays (it cannot
    /// read the values that reference them, so it cannot tell).
    package func collectBlobs(graceMs: UInt64 = 0) throws -> [StoredBlob] {
        let now = clock()
        try store.write { try $0.markUnreferencedBlobs(now: now) }
        let candidates = try store.read {
            try $0.collectableBlobs(
                unreferencedBy: now &- min(graceMs, now), usedBy: now &- min(BlobRetention.inUseMs, now))
        }
        let gone = try notRelayed(candidates)
        try store.write { db in for b in gone { try db.deleteBlob(b.id) } }
        for b in gone { blobFiles.remove(b.id) }
        return gone
    }

    /// Evicts fetched blobs, least recently used first, until the whole ones fetched here take
    /// at most `cacheBytes`; returns them. Never one put or imported here, one a pin keeps, one
    /// used in the last `BlobRetention.inUseMs`, or one kept for a group this device relays. An
    /// evicted blob is fetched again when a reader asks for it.
    package func evictBlobs(toFit cacheBytes: UInt64) throws -> [StoredBlob] {
        var over = try store.read { try $0.cachedBlobBytes() }
        guard over > cacheBytes else { return [] }
        over -= cacheBytes
        let now = clock()
        var evicted: [StoredBlob] = []
        let candidates = try store.read {
            try $0.evictionCandidates(usedBy: now &- min(BlobRetention.inUseMs, now), limit: 1_000)
        }
        for blob in try notRelayed(candidates) {
            guard over > 0 else { break }
            try store.write { try $0.evictBlob(blob.id) }
            blobFiles.remove(blob.id)
            evicted.append(blob)
            over -= min(over, blob.layout.size)
        }
        return evicted
    }

    /// The blobs of `candidates` not kept for a group this device relays.
    private func notRelayed(_ candidates: [(blob: StoredBlob, groups: [GroupID])]) throws -> [StoredBlob] {
        var relayed: [GroupID: Bool] = [:]
        return try candidates.filter { _, groups in
            try !groups.contains { g in
                if let known = relayed[g] { return known }
                let here = try relaysHere(g)
                relayed[g] = here
                return here
            }
        }.map(\.blob)
    }
}

/// How long blobs are kept (docs/PROTOCOL.md §24.6).
package enum BlobRetention {
    /// A blob put, read or fetched this recently is in use: never collected or evicted (10 s).
    package static let inUseMs: UInt64 = 10_000
    /// A blob no value references is collected after this long by a running node (24 h).
    package static let graceMs: UInt64 = 24 * 3_600_000
    /// The fetched blobs a running node keeps, by default (16 GiB).
    package static let cacheBytes: UInt64 = 16 << 30
}

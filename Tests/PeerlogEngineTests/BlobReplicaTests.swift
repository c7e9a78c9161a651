import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// A replica's side of blobs (docs/PROTOCOL.md §24): a file stored as a blob reads back equal,
/// and what a peer sends is checked against the blob id before a byte of it is written.
@Suite struct BlobReplicaTests {
    /// A file of `count` bytes (chunk-sized runs of one byte each), in a new directory.
    func file(count: Int, seed: Int = 0) throws -> String {
        let dir = try TestSupport.temporaryDirectory()
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 / 1_000 &+ $0 % 7 &+ seed) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/f"))
        return dir + "/f"
    }

    @Test(arguments: [false, true])
    func aBlobMovesChunkByChunkAndEveryChunkIsChecked(sealed: Bool) throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(
            name: "album", encryption: sealed ? GroupEncryptionSettings(history: false) : nil)
        let path = try file(count: 2_500_000)
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let reference = try alice.replica.storeBlob(from: path, in: group)
        #expect(reference.layout.chunkCount == 3 && reference.layout.sealed == sealed)
        #expect(BlobReference(value: reference.cbor) == reference)
        // Alice reads back what she put.
        let original = [UInt8](FileManager.default.contents(atPath: path)!)
        let read = try (0..<3).flatMap { try alice.replica.blobPlaintext(reference, chunk: $0) }
        #expect(read == original)

        // Bob takes the hashes only when they hash to the id, then each chunk only when it matches.
        try bob.replica.beginBlob(reference, for: group)
        let hashes = try #require(try alice.replica.storedBlob(reference.id)?.hashes)
        var forged = hashes
        forged[0] ^= 1
        #expect(try bob.replica.acceptBlobHashes(reference.id, forged) == false)
        #expect(try bob.replica.acceptBlobChunk(reference.id, index: 0, bytes: [1, 2, 3]) == .unneeded)
        #expect(try bob.replica.acceptBlobHashes(reference.id, hashes))
        var chunk1 = try #require(try alice.replica.blobChunk(reference.id, index: 1))
        chunk1[100] ^= 0xff
        #expect(try bob.replica.acceptBlobChunk(reference.id, index: 1, bytes: chunk1) == .corrupt)
        #expect(try bob.replica.storedBlob(reference.id)?.held == 0)
        // A blob being fetched is never collected, referenced or not.
        #expect(try bob.replica.collectBlobs().isEmpty)
        #expect(try bob.replica.storedBlob(reference.id) != nil)
        for index in [2, 0] {
            let good = try #require(try alice.replica.blobChunk(reference.id, index: index))
            #expect(try bob.replica.acceptBlobChunk(reference.id, index: index, bytes: good) != .corrupt)
        }
        #expect(try bob.replica.storedBlob(reference.id)?.complete == false)
        // A whole blob is never read from a part file: the last chunk completes it.
        let last = try #require(try alice.replica.blobChunk(reference.id, index: 1))
        #expect(try bob.replica.acceptBlobChunk(reference.id, index: 1, bytes: last) == .completed)
        #expect(try (0..<3).flatMap { try bob.replica.blobPlaintext(reference, chunk: $0) } == original)
        // Fetched for the group: served to its members from now on, to no other group's.
        #expect(try bob.replica.blobServes(reference.id, in: group))
        #expect(try bob.replica.blobServes(reference.id, in: GroupID.random()) == false)
        for r in [alice, bob] { try? FileManager.default.removeItem(atPath: r.replica.blobFiles.directory) }
    }

    @Test func theSameBytesPutTwiceInAPlaintextGroupAreOneBlob() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "docs")
        let path = try file(count: 100_000)
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let first = try alice.replica.storeBlob(from: path, in: group)
        let second = try alice.replica.storeBlob(from: path, in: group)
        #expect(first == second)
        #expect(try alice.replica.storedBlobs().count == 1)
        // Just put: in use (a write may be about to reference it), so not collected yet.
        #expect(try alice.replica.collectBlobs().isEmpty)
        alice.clock.advance(BlobRetention.inUseMs)
        // No value references it (it was stored, never put): collected, unless pinned.
        #expect(try alice.replica.pinBlob(first.id, true))
        #expect(try alice.replica.collectBlobs().isEmpty)
        #expect(try alice.replica.pinBlob(first.id, false))
        #expect(try alice.replica.collectBlobs().map(\.id) == [first.id])
        #expect(!alice.replica.blobFiles.exists(first.id))
        try? FileManager.default.removeItem(atPath: alice.replica.blobFiles.directory)
    }

    /// In an encrypted group the key derives from the bytes and the epoch key (§24.1): the same
    /// file twice is one blob (and stays sealed); after a rotation it is another; other bytes are
    /// another; standard input, read once, gets a random key.
    @Test func theSameBytesPutTwiceInAnEncryptedGroupAreOneBlobWithinAnEpoch() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "album", encryption: GroupEncryptionSettings(history: false))
        let path = try file(count: 100_000)
        let other = try file(count: 100_000, seed: 1)
        defer {
            for p in [path, other] {
                try? FileManager.default.removeItem(atPath: (p as NSString).deletingLastPathComponent)
            }
            try? FileManager.default.removeItem(atPath: alice.replica.blobFiles.directory)
        }
        let first = try alice.replica.storeBlob(from: path, in: group)
        let second = try alice.replica.storeBlob(from: path, in: group)
        #expect(first.key != nil && first.layout.sealed)
        #expect(first == second)
        #expect(try alice.replica.storedBlobs().count == 1)
        #expect(try alice.replica.storeBlob(from: other, in: group).id != first.id)
        // The stored chunks are not the plaintext.
        let stored = try #require(try alice.replica.blobChunk(first.id, index: 0))
        let plain = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(stored.prefix(64)) != Array(plain.prefix(64)))
        #expect(try alice.replica.blobPlaintext(first, chunk: 0) == plain)
        try alice.replica.rotateEpochKey(of: group)
        let rotated = try alice.replica.storeBlob(from: path, in: group)
        #expect(rotated.id != first.id && rotated.key != first.key)
        #expect(try alice.replica.blobPlaintext(rotated, chunk: 0) == plain)
    }

    /// PROTOCOL.md §24.1's example of the key derivation, computed independently (Python's
    /// hashlib): an implementation that derives keys the same way dedupes with this one.
    @Test func theBlobKeyDerivationMatchesTheProtocolExample() throws {
        let epoch = try EpochKey(secret: SecureBytes([UInt8](repeating: 1, count: 32)))
        #expect(
            hexString(epoch.blobSecret.withUnsafeBytes { Array($0) })
                == "9c8db0dfb7b49252d548aef393aa025b82afa3d295c97ebcd70c183d9639499e")
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("hello".utf8).write(to: URL(fileURLWithPath: dir + "/hello"))
        let key = try BlobFiles.convergentKey(of: dir + "/hello", secret: epoch.blobSecret)
        #expect(
            hexString(key.withUnsafeBytes { Array($0) })
                == "7e4e017e9fad6d56b6ae188c3c3c6947631bbc53ec2f74403c732f2d610f37cf")
    }

    /// Collection (§24.6): a blob that a value references, committed or only tentative (a
    /// member's write the sequencer has not ordered), is never collected; one unreferenced is
    /// collected once it stayed so for the grace period; a pin keeps it.
    @Test func collectionNeverTakesABlobAValueReferences() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob", clock: alice.clock)
        let group = try groupWith(owner: alice, members: [bob])
        let paths = try (0..<3).map { try file(count: 50_000, seed: 10 + $0) }
        defer {
            for p in paths { try? FileManager.default.removeItem(atPath: (p as NSString).deletingLastPathComponent) }
            for r in [alice, bob] { try? FileManager.default.removeItem(atPath: r.replica.blobFiles.directory) }
        }
        let refs = try paths.map { try bob.replica.storeBlob(from: $0, in: group) }
        // Bob's writes stay tentative: Alice (the sequencer) has not seen them.
        try bob.replica.append(.entityPut(key: "a", value: refs[0].cbor), to: group)
        try bob.replica.append(.entityPut(key: "b", value: refs[1].cbor), to: group)
        let grace: UInt64 = 3_600_000
        alice.clock.advance(BlobRetention.inUseMs)
        #expect(try bob.replica.collectBlobs(graceMs: grace).isEmpty, "unreferenced only since now")
        alice.clock.advance(grace)
        #expect(try bob.replica.collectBlobs(graceMs: grace).map(\.id) == [refs[2].id])
        // Committed now; then "b" points elsewhere: its blob goes after the grace, "a"'s stays.
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        #expect(try bob.get("a", group, .committed) == refs[0].cbor)
        try bob.replica.append(.entityPut(key: "b", value: "plain"), to: group)
        alice.clock.advance(grace)
        #expect(try bob.replica.collectBlobs(graceMs: grace).isEmpty, "the committed value still references it")
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        #expect(try bob.replica.collectBlobs(graceMs: grace).isEmpty, "unreferenced only since now")
        alice.clock.advance(grace)
        #expect(try bob.replica.pinBlob(refs[1].id, true))
        #expect(try bob.replica.collectBlobs(graceMs: grace).isEmpty, "pinned")
        #expect(try bob.replica.pinBlob(refs[1].id, false))
        #expect(try bob.replica.collectBlobs(graceMs: grace).map(\.id) == [refs[1].id])
        #expect(try bob.replica.storedBlob(refs[0].id)?.complete == true)
        #expect(bob.replica.blobFiles.exists(refs[0].id) && !bob.replica.blobFiles.exists(refs[1].id))
    }

    /// The cache (§24.6): over its size, fetched blobs go least recently used first; never one
    /// put here, one pinned or one just used. An evicted blob is not fetched again by itself
    /// (its value still references it) until a reader asks.
    @Test func theCacheEvictsFetchedBlobsLeastRecentlyUsedFirst() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob", clock: alice.clock)
        let group = try groupWith(owner: alice, members: [bob])
        let paths = try (0..<4).map { try file(count: 100_000, seed: 20 + $0) }
        defer {
            for p in paths { try? FileManager.default.removeItem(atPath: (p as NSString).deletingLastPathComponent) }
            for r in [alice, bob] { try? FileManager.default.removeItem(atPath: r.replica.blobFiles.directory) }
        }
        let refs = try paths.map { try alice.replica.storeBlob(from: $0, in: group) }
        for (i, r) in refs.enumerated() { try alice.replica.append(.entityPut(key: "k\(i)", value: r.cbor), to: group) }
        try alice.send(group, to: bob)
        // Bob fetches the first three, one a minute; pins the first; puts the fourth himself.
        for r in refs[0..<3] {
            try bob.replica.beginBlob(r, for: group)
            #expect(try bob.replica.acceptBlobHashes(r.id, #require(try alice.replica.storedBlob(r.id)?.hashes)))
            let chunk = try #require(try alice.replica.blobChunk(r.id, index: 0))
            #expect(try bob.replica.acceptBlobChunk(r.id, index: 0, bytes: chunk) == .completed)
            alice.clock.advance(60_000)
        }
        _ = try bob.replica.storeBlob(from: paths[3], in: group)
        #expect(try bob.replica.pinBlob(refs[0].id, true))
        #expect(try bob.replica.wantedBlobIDs() == [])
        // Room for one fetched blob: the oldest unpinned (refs[1]) goes, then refs[2] would
        // fit. Reading refs[1]... it is gone; a reader's fetch wants it again.
        #expect(try bob.replica.evictBlobs(toFit: 250_000).map(\.id) == [refs[1].id])
        #expect(try bob.replica.evictBlobs(toFit: 250_000).isEmpty)
        #expect(try bob.replica.storedBlob(refs[1].id)?.evicted == true)
        #expect(!bob.replica.blobFiles.exists(refs[1].id))
        #expect(try bob.replica.incompleteBlobs().isEmpty && bob.replica.wantedBlobIDs() == [])
        // Nothing fits: every unpinned fetched one goes, the pinned one and Bob's own stay.
        #expect(try bob.replica.evictBlobs(toFit: 0).map(\.id) == [refs[2].id])
        #expect(try bob.replica.storedBlob(refs[0].id)?.complete == true)
        #expect(try bob.replica.storedBlob(refs[3].id)?.complete == true)
        try bob.replica.wantBlob(refs[1], for: group)
        #expect(try bob.replica.incompleteBlobs().map(\.blob.id) == [refs[1].id])
    }

    @Test func layoutLimitsAreChecked() throws {
        #expect(throws: ModelError.self) { try BlobLayout(size: BlobLayout.maxSize + 1, sealed: false) }
        #expect(throws: ModelError.self) { try BlobLayout(size: 1, chunkBytes: 16_383, sealed: false) }
        #expect(throws: ModelError.self) { try BlobLayout(size: 1 << 31, chunkBytes: 16_384, sealed: false) }
        #expect(try BlobLayout(size: BlobLayout.maxSize, sealed: true).chunkCount == 65_538)
        #expect(try BlobLayout(size: BlobLayout.maxSize, sealed: false).chunkCount == 65_536)
        #expect(throws: ModelError.self) {
            try BlobLayout(size: UInt64(BlobLayout.maxChunks) * 16_384 + 1, chunkBytes: 16_384, sealed: false)
        }
        #expect(
            try BlobLayout(size: UInt64(BlobLayout.maxChunks) * 16_384, chunkBytes: 16_384, sealed: false).chunkCount
                == BlobLayout.maxChunks)
        // Every stored chunk but the last fills whole pages, sealed or not (direct writes).
        for sealed in [false, true] {
            let layout = try BlobLayout(size: 5 << 20, sealed: sealed)
            #expect(layout.storedBytes(ofChunk: 0) == 1 << 20 && layout.storedOffset(ofChunk: 3) == 3 << 20)
        }
        #expect(try BlobLayout(size: 0, sealed: false).chunkCount == 0)
    }

    /// PROTOCOL.md §24.5's worked example, computed independently with Python's hashlib.
    @Test func theWorkedExampleOfTheProtocol() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "docs")
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("hello".utf8).write(to: URL(fileURLWithPath: dir + "/hello"))
        let reference = try alice.replica.storeBlob(from: dir + "/hello", in: group)
        #expect(reference.id.string == "bhuqaol77mxv3t4m5uxottzcpgi5gbfovlgpqkwdmpyaqhlzughuq")
        #expect(
            hexString(CBOREncoder.encode(reference.cbor))
                == "a16c706565726c6f672e626c6f62a462696458203d20072fff65ebb9f19da5dd39e44f323a6095d5599f05586c7e0103af3431e96473697a6505656368756e6b1a0010000066666f726d617402"
        )
        try? FileManager.default.removeItem(atPath: alice.replica.blobFiles.directory)
    }

    /// The first format (BLAKE2b, no `format` field) is still read and checked: PROTOCOL.md
    /// §24.5's example of it; a `format` of 1 (never written) or 3 (unknown) is no reference.
    @Test func theFirstFormatIsStillReadAndChecked() throws {
        let old = TestSupport.bytes(
            hex:
                "a16c706565726c6f672e626c6f62a36269645820800d7b019154c3e12b30d177f9c4087ed6bb4a99953c2ae7c7ac0fb0b86fd3096473697a6505656368756e6b1a00100000"
        )
        let reference = try #require(BlobReference(value: try CBORDecoder.decodeStrict(old)))
        #expect(reference.layout.format == .blake2b && reference.layout.size == 5)
        let hashes = Array("hello".utf8).withUnsafeBytes(reference.layout.chunkHash)
        #expect(hexString(hashes) == "324dcf027dd4a30a932c441f365a25e86b173defa4b8e58948253471b81b72cf")
        #expect(reference.layout.id(hashes: hashes) == reference.id)
        #expect(reference.layout.chunk(Array("hello".utf8), index: 0, matches: hashes))
        #expect(CBOREncoder.encode(reference.cbor) == old)
        // The same bytes in the current format hash otherwise: a layout's format is part of its id.
        let current = try BlobLayout(size: 5, sealed: false)
        #expect(current.id(hashes: Array("hello".utf8).withUnsafeBytes(current.chunkHash)) != reference.id)
        // The store keeps the format (a row from before migration 0015 reads as format 1).
        let alice = try TestReplica("alice")
        try alice.replica.store.write { try $0.addBlob(reference.id, layout: reference.layout, now: 1) }
        #expect(try alice.replica.storedBlob(reference.id)?.layout == reference.layout)
        for format in [1, 3] as [UInt64] {
            var map = try #require(CBORDecoder.decodeStrict(old).mapValue?[.text(BlobReference.marker)]?.mapValue)
            map[.text("format")] = .unsigned(format)
            #expect(BlobReference(value: .map([.text(BlobReference.marker): .map(map)])) == nil)
        }
    }
}

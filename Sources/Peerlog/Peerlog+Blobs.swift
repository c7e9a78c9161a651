import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore

#if canImport(Glibc)
import Glibc
#endif

/// A value stored as a blob (docs/PROTOCOL.md §24), as this device holds it.
public struct PeerlogBlob: Sendable, Hashable {
    /// The blob's id (its text form starts with `b`).
    public let id: BlobID
    /// The value's size in bytes.
    public let size: UInt64
    /// Bytes of it held here; `size` when ``isHeld``.
    public let heldBytes: UInt64
    /// Whether the whole value is here and readable.
    public let isHeld: Bool
    /// Whether a pin keeps it.
    public let isPinned: Bool
    /// Whether its chunks are sealed (a blob of an encrypted group).
    public let isSealed: Bool
    /// Whether it was put or imported here (kept until no value references it), not fetched.
    public let isLocal: Bool
    /// Whether the cache evicted it: fetched again only when read (``Peerlog/fetchBlob(_:in:)``).
    public let isEvicted: Bool
}

extension Peerlog {
    /// `peerlog put --value-file` stores a file of more bytes than this as a blob (16 KiB): a
    /// smaller one costs less as a plain value in the receipt. ``put(_:file:in:progress:)``
    /// always stores a blob.
    public static let blobThresholdBytes = 16_384

    /// Sets `key` to the contents of the file at `path` (`-`: standard input), stored as a blob:
    /// cut into chunks, sealed in an encrypted group (under a key derived from the bytes and the
    /// group's epoch key, so the same file put twice in one epoch is stored once), and referenced
    /// from the value. The write commits and syncs like any other; peers fetch the bytes after it.
    /// `progress` gets the bytes read so far.
    @discardableResult
    public func put(
        _ key: String, file path: String, in group: GroupID,
        progress: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) async throws -> PeerlogWrite {
        let reference = try await call(.file) { [self] in
            try replica.storeBlob(from: path, in: group, progress: progress)
        }
        return try await write(.entityPut(key: key, value: reference.cbor), to: group)
    }

    /// The blob `key`'s value references, as held here; nil when the value is not a blob (or absent).
    public func blob(_ key: String, in group: GroupID, view: View = .tentative) async throws -> PeerlogBlob? {
        guard let reference = try await reference(key, in: group, view: view) else { return nil }
        return try await call { [self] in try Self.blob(reference, replica.storedBlob(reference.id)) }
    }

    /// Every blob held here, whole or in part.
    public func blobs() async throws -> [PeerlogBlob] {
        try await call { [self] in try replica.storedBlobs().map { Self.blob(nil, $0) } }
    }

    /// Asks for the blob of `key` to be fetched (a running node fetches it from peers that hold
    /// it, whatever its size). Returns it as held now.
    @discardableResult
    public func fetchBlob(_ key: String, in group: GroupID) async throws -> PeerlogBlob {
        guard let reference = try await reference(key, in: group, view: .tentative) else {
            throw PeerlogError(.invalidValue, "the value of \"\(key)\" in group \(group) is not a blob")
        }
        return try await call { [self] in
            try replica.wantBlob(reference, for: group)
            return Self.blob(reference, try replica.storedBlob(reference.id))
        }
    }

    /// Writes the value of blob `key` to the file at `path` (`-`: standard output), opened chunk
    /// by chunk. Throws `blobNotHeld` when it is not whole here yet.
    public func readBlob(_ key: String, in group: GroupID, to path: String, view: View = .tentative) async throws {
        guard let reference = try await reference(key, in: group, view: view) else {
            throw PeerlogError(.invalidValue, "the value of \"\(key)\" in group \(group) is not a blob")
        }
        try await call(.file) { [self] in
            guard try replica.storedBlob(reference.id)?.complete == true else {
                throw ReplicaError(
                    .blobNotHeld,
                    "blob \(reference.id) (\(reference.layout.size) bytes) of \"\(key)\" is not held whole here yet")
            }
            let fd = path == "-" ? 1 : Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw PeerlogError(.file, "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            defer { if fd != 1 { close(fd) } }
            for index in 0..<reference.layout.chunkCount {
                // In use while read: no cache eviction or collection takes it meanwhile.
                if index % 32 == 0 { replica.touchBlob(reference.id) }
                let plain = try replica.blobPlaintext(reference, chunk: index)
                var done = 0
                while done < plain.count {
                    let n = plain.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, plain.count - done) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else {
                        throw PeerlogError(.file, "cannot write \(path): \(String(cString: strerror(errno)))")
                    }
                    done += n
                }
            }
        }
    }

    /// The value of blob `key` as it arrives: its chunks in order, each as soon as it is here
    /// and checked, before the whole blob is. Asks for the blob as ``fetchBlob(_:in:)`` does (a
    /// running node fetches it). Throws `blobUnavailable` when no chunk arrived for
    /// `stallTimeout` (no connected peer serves it, or no node runs), `blobNotHeld`-free: a
    /// partial blob streams what it has.
    public func blobChunks(
        _ key: String, in group: GroupID, view: View = .tentative, stallTimeout: Duration = .seconds(60)
    ) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    guard let reference = try await reference(key, in: group, view: view) else {
                        throw PeerlogError(.invalidValue, "the value of \"\(key)\" in group \(group) is not a blob")
                    }
                    if (try await call { [self] in try replica.storedBlob(reference.id)?.complete }) != true,
                        replica.store.access == .readWrite
                    {
                        try await call { [self] in try replica.wantBlob(reference, for: group) }
                    }
                    var progress = ContinuousClock.now
                    for index in 0..<reference.layout.chunkCount {
                        while (try await call { [self] in try replica.storedBlob(reference.id)?.holds(chunk: index) })
                            != true
                        {
                            guard ContinuousClock.now - progress < stallTimeout else {
                                throw PeerlogError(
                                    .blobUnavailable,
                                    "no chunk of blob \(reference.id) of \"\(key)\" arrived for \(stallTimeout) (chunk \(index) of \(reference.layout.chunkCount) next): no connected peer serves it"
                                )
                            }
                            try await Task.sleep(for: .milliseconds(20))
                        }
                        progress = .now
                        if index % 32 == 0 { replica.touchBlob(reference.id) }
                        continuation.yield(
                            Data(try await call { [self] in try replica.blobPlaintext(reference, chunk: index) }))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The value of blob `key` in memory (for small blobs; use ``readBlob(_:in:to:view:)`` for
    /// large ones).
    public func blobData(_ key: String, in group: GroupID, view: View = .tentative) async throws -> Data {
        guard let reference = try await reference(key, in: group, view: view) else {
            throw PeerlogError(.invalidValue, "the value of \"\(key)\" in group \(group) is not a blob")
        }
        return try await call { [self] in
            guard try replica.storedBlob(reference.id)?.complete == true else {
                throw ReplicaError(.blobNotHeld, "blob \(reference.id) of \"\(key)\" is not held whole here yet")
            }
            var data = Data(capacity: Int(reference.layout.size))
            for index in 0..<reference.layout.chunkCount {
                if index % 32 == 0 { replica.touchBlob(reference.id) }
                data.append(contentsOf: try replica.blobPlaintext(reference, chunk: index))
            }
            return data
        }
    }

    /// Pins (keeps) or unpins a blob held here; false when none has that id.
    public func pinBlob(_ id: BlobID, _ pinned: Bool = true) async throws -> Bool {
        try await call { [self] in try replica.pinBlob(id, pinned) }
    }

    /// Deletes the blobs held here that no value references (committed or tentative) and no pin
    /// keeps, except those used in the last 10 s (a write may be about to reference one). A
    /// running node does this by itself for blobs unreferenced for 24 hours.
    public func collectBlobs() async throws -> [PeerlogBlob] {
        try await call { [self] in try replica.collectBlobs().map { Self.blob(nil, $0) } }
    }

    func reference(_ key: String, in group: GroupID, view: View) async throws -> BlobReference? {
        try await entry(key, in: group, view: view).flatMap { BlobReference(value: $0.value) }
    }

    static func blob(_ reference: BlobReference?, _ stored: StoredBlob?) -> PeerlogBlob {
        let layout = stored?.layout ?? reference!.layout
        return PeerlogBlob(
            id: stored?.id ?? reference!.id, size: layout.size, heldBytes: stored?.heldBytes ?? 0,
            isHeld: stored?.complete ?? false, isPinned: stored?.pinned ?? false, isSealed: layout.sealed,
            isLocal: stored?.local ?? false, isEvicted: stored?.evicted ?? false)
    }
}

import Foundation
import PeerlogCrypto
import PeerlogModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A home's blob files (docs/PROTOCOL.md §24.4): `blobs/<hex id>` holds a whole blob's stored
/// bytes (sealed chunks in an encrypted group), `blobs/<hex id>.part` one being fetched, written
/// chunk by chunk at the chunk's offset and renamed once every chunk is in. A reader never sees
/// a part file as a value. Positional reads and writes: safe from several threads.
package struct BlobFiles: Sendable {
    package let directory: String

    package init(directory: String) { self.directory = directory }

    /// The blob directory of the home holding `storePath` (`replica.sqlite`).
    /// An in-memory store (tests) keeps its blobs in a directory of its own under the
    /// temporary directory, named for the process and the store.
    package init(besideStoreAt storePath: String, memoryKey: Int = 0) {
        if storePath == ":memory:" {
            self.init(directory: NSTemporaryDirectory() + "peerlog-blobs-\(getpid())-\(memoryKey)")
        } else {
            self.init(directory: (storePath as NSString).deletingLastPathComponent + "/blobs")
        }
    }

    package func path(_ id: BlobID) -> String { directory + "/" + id.hex }
    package func partPath(_ id: BlobID) -> String { directory + "/" + id.hex + ".part" }

    package func exists(_ id: BlobID) -> Bool { access(path(id), F_OK) == 0 }

    func ensureDirectory() throws {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw Self.error("cannot create \(directory)") }
    }

    /// Writes one verified chunk of a blob being fetched. The part file is given its whole
    /// size (`storedSize`) when it is created, so a disk too small for the blob says so at the
    /// first chunk, and the file system allocates it once rather than page by page.
    ///
    /// A chunk that starts and ends on a page boundary (every stored chunk but the last, with
    /// the chunk sizes this version writes) goes past the page cache (`O_DIRECT`): filling fresh
    /// cache pages costs more CPU than anything else a receiver does (docs/BENCHMARKS.md,
    /// "Blobs"), and a fetched blob is rarely read at once. A file system without direct I/O
    /// (tmpfs) takes it through the cache.
    package func writeChunk(
        _ bytes: UnsafeRawBufferPointer, of id: BlobID, at offset: UInt64, storedSize: UInt64
    ) throws {
        try ensureDirectory()
        let fd = open(partPath(id), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.error("cannot open \(partPath(id))") }
        defer { close(fd) }
        var st = stat()
        if fstat(fd, &st) == 0, st.st_size == 0, storedSize > 0 {
            let rc = posix_fallocate(fd, 0, off_t(storedSize))
            if rc == ENOSPC || rc == EDQUOT {
                _ = ftruncate(fd, 0)
                errno = rc
                throw Self.error("cannot make room for \(storedSize) bytes in \(partPath(id))")
            }
        }
        try write(bytes, to: fd, path: partPath(id), at: offset)
    }

    /// Writes `bytes` at `offset` of `fd` (the file at `path`): past the page cache when they
    /// fill whole pages and the file system allows it (`DirectBuffer`), else through it.
    private func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, path: String, at offset: UInt64) throws {
        var done = 0
        if offset % DirectBuffer.alignment == 0 && bytes.count % Int(DirectBuffer.alignment) == 0 {
            done = try DirectBuffer.write(bytes, to: path, at: offset)
        }
        try Self.writeAll(fd, UnsafeRawBufferPointer(rebasing: bytes[done...]), at: offset + UInt64(done), path: path)
    }

    /// Writes bytes at `offset` of a file in the blob directory (an import's temporary file).
    package func writeFile(_ path: String, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try ensureDirectory()
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.error("cannot open \(path)") }
        defer { close(fd) }
        try Self.writeAll(fd, bytes, at: offset, path: path)
    }

    /// Makes a checked temporary file the blob `id` (kept as it is when that blob exists), and
    /// drops a part file a fetch of it left.
    package func adopt(_ temporary: String, as id: BlobID) throws {
        try ensureDirectory()
        let fd = open(temporary, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)  // an empty blob has no bytes written
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
        if exists(id) {
            unlink(temporary)
        } else {
            guard rename(temporary, path(id)) == 0 else { throw Self.error("cannot rename \(temporary)") }
        }
        unlink(partPath(id))
    }

    /// Reads `count` stored bytes at `offset`, from the whole file or the part file.
    package func read(_ id: BlobID, at offset: UInt64, count: Int) throws -> [UInt8] {
        var fd = open(path(id), O_RDONLY | O_CLOEXEC)
        if fd < 0 { fd = open(partPath(id), O_RDONLY | O_CLOEXEC) }
        // The last chunk may have renamed the part file between the two opens.
        if fd < 0 { fd = open(path(id), O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw Self.error("cannot open blob \(id)") }
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Self.error("blob \(id) is shorter than expected") }
            done += n
        }
        return out
    }

    /// Makes a fetched blob whole: flushes its part file and gives it the final name.
    package func finish(_ id: BlobID) throws {
        let fd = open(partPath(id), O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
        guard rename(partPath(id), path(id)) == 0 else { throw Self.error("cannot rename \(partPath(id))") }
    }

    /// Removes a blob's files, whole or partial.
    package func remove(_ id: BlobID) {
        unlink(path(id))
        unlink(partPath(id))
    }

    /// Cuts a local file into a blob (docs/PROTOCOL.md §24.1): reads `source` (a path; "-" is
    /// standard input) once, seals each chunk under `key` when given, hashes it and writes it to
    /// a temporary file (past the page cache, as a fetched chunk), which becomes `blobs/<hex id>` (kept as it is when that blob exists: the
    /// same bytes are stored once). `progress` gets the plaintext bytes read so far.
    package func store(
        from source: String, key: SecureBytes?, chunkBytes: UInt32? = nil,
        progress: (UInt64) -> Void = { _ in }
    ) throws -> (id: BlobID, layout: BlobLayout, hashes: [UInt8]) {
        let input = source == "-" ? 0 : open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Self.error("cannot open \(source)") }
        defer { if input != 0 { close(input) } }
        return try store(named: source, key: key, chunkBytes: chunkBytes, progress: progress) { buffer, count in
            try Self.readFull(input, into: &buffer, count: count, path: source)
        }
    }

    /// Stores `bytes` as a blob (a snapshot to send), as `store(from:key:)` stores a file.
    package func store(bytes: [UInt8], key: SecureBytes?) throws -> (id: BlobID, layout: BlobLayout, hashes: [UInt8]) {
        var offset = 0
        return try store(named: "a snapshot", key: key, chunkBytes: nil) { buffer, count in
            let n = min(count, bytes.count - offset)
            buffer.withUnsafeMutableBytes { out in
                bytes.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
            }
            offset += n
            return n
        }
    }

    /// The chunking, sealing, hashing and writing of `store`; `read` fills the buffer's start
    /// with up to `count` bytes and returns how many (fewer only at the end).
    private func store(
        named source: String, key: SecureBytes?, chunkBytes: UInt32?, progress: (UInt64) -> Void = { _ in },
        read: (inout [UInt8], Int) throws -> Int
    ) throws -> (id: BlobID, layout: BlobLayout, hashes: [UInt8]) {
        let chunkBytes = chunkBytes ?? BlobLayout.defaultChunkBytes(sealed: key != nil)
        try ensureDirectory()
        let temporary = directory + "/.incoming-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw Self.error("cannot create \(temporary)") }
        var keep = false
        defer {
            close(output)
            if !keep { unlink(temporary) }
        }
        let tag = key == nil ? 0 : ChaChaPoly.tagLength
        var buffer = [UInt8](repeating: 0, count: Int(chunkBytes) + tag)
        var hashes = [UInt8]()
        var size: UInt64 = 0
        var offset: UInt64 = 0
        var index = 0
        while true {
            let n = try read(&buffer, Int(chunkBytes))
            if n == 0 { break }
            size += UInt64(n)
            guard size <= BlobLayout.maxSize else {
                throw StoreError(
                    .blobFile, "\(source) is over \(BlobLayout.maxSize) bytes (64 GiB), the most a blob holds")
            }
            if let key {
                try ChaChaPoly.sealInPlace(&buffer, range: 0..<n, key: key, nonce: BlobLayout.nonce(ofChunk: index))
            }
            try buffer.withUnsafeBytes { b in
                let stored = UnsafeRawBufferPointer(rebasing: b[0..<(n + tag)])
                hashes += BlobLayout.chunkHash(stored, format: .current)
                try write(stored, to: output, path: temporary, at: offset)
            }
            offset += UInt64(n + tag)
            index += 1
            progress(size)
            if n < Int(chunkBytes) { break }
        }
        let layout = try BlobLayout(size: size, chunkBytes: chunkBytes, sealed: key != nil)
        let id = layout.id(hashes: hashes)
        if !exists(id) {
            guard fsync(output) == 0 || errno == EINVAL else { throw Self.error("cannot flush \(temporary)") }
            guard rename(temporary, path(id)) == 0 else { throw Self.error("cannot rename \(temporary)") }
            keep = true
        }
        return (id, layout, hashes)
    }

    /// The key a sealed blob of the file at `path` gets, so the same bytes put twice in a group
    /// (in one epoch) make one blob (docs/PROTOCOL.md §24.1): HMAC-SHA-256 under `secret` (the
    /// group's blob secret of its newest epoch) of `"peerlog/blob-key/v2"` and the file's bytes,
    /// read once.
    package static func convergentKey(of path: String, secret: SecureBytes) throws -> SecureBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw error("cannot open \(path)") }
        defer { close(fd) }
        let h = convergentHasher(secret)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = try readFull(fd, into: &buffer, count: buffer.count, path: path)
            buffer.withUnsafeBytes { h.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            if n < buffer.count { break }
        }
        return SecureBytes(h.finalize())
    }

    /// `convergentKey(of:secret:)` of bytes in memory.
    package static func convergentKey(of bytes: [UInt8], secret: SecureBytes) -> SecureBytes {
        let h = convergentHasher(secret)
        h.update(bytes)
        return SecureBytes(h.finalize())
    }

    /// HMAC-SHA-256 under the blob secret with the label absorbed: the plaintext follows. (The
    /// first format's keys were keyed BLAKE2b, at a third of the rate; a reader never derives a
    /// key, so only deduplication across the change is lost.)
    private static func convergentHasher(_ secret: SecureBytes) -> HMAC<SHA256> {
        let h = secret.withUnsafeBytes { HMAC<SHA256>(key: $0) }
        h.update(Array("peerlog/blob-key/v2".utf8))
        return h
    }

    /// Reads a whole blob's chunk hashes from its file (to serve them, or check the file).
    package func hashes(of id: BlobID, layout: BlobLayout) throws -> [UInt8] {
        var hashes = [UInt8]()
        hashes.reserveCapacity(layout.chunkCount * 32)
        for i in 0..<layout.chunkCount {
            let chunk = try read(id, at: layout.storedOffset(ofChunk: i), count: layout.storedBytes(ofChunk: i))
            hashes += chunk.withUnsafeBytes(layout.chunkHash)
        }
        return hashes
    }

    static func readFull(_ fd: Int32, into buffer: inout [UInt8], count: Int, path: String) throws -> Int {
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw error("cannot read \(path)") }
            if n == 0 { break }
            done += n
        }
        return done
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64, path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw error("cannot write \(path)") }
            done += n
        }
    }

    /// The error for the failed call, from `errno`: a full disk has its own code.
    static func error(_ what: String) -> StoreError {
        let e = errno
        let reason = String(cString: strerror(e))
        return StoreError(e == ENOSPC || e == EDQUOT ? .diskFull : .blobFile, "\(what): \(reason)")
    }
}

/// Page-aligned buffers for direct writes (a direct write's memory, offset and length must be
/// aligned), kept for reuse so a transfer does not fault in fresh pages for every chunk.
enum DirectBuffer {
    static let alignment: UInt64 = 4_096
    /// Linux's `O_DIRECT`, which Glibc's Swift module does not export (it needs `_GNU_SOURCE`).
    #if arch(arm64) || arch(arm)
    static let O_DIRECT: Int32 = 0o200000
    #else
    static let O_DIRECT: Int32 = 0o40000
    #endif
    /// Buffers kept (of at most `keptBytes`); more at once are made and freed.
    private static let pool = Mutex<[Buffer]>([])
    /// Memory only one thread uses at a time: out of the pool, or in it.
    private struct Buffer: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let capacity: Int
    }
    private static let kept = 4
    private static let keptBytes = 4 << 20

    /// Writes `bytes` at `offset` of the file at `path` past the page cache; returns how many
    /// bytes it wrote: 0 when the file system refuses direct writes, fewer than all after a
    /// short write (the rest is not aligned any more). The caller writes the rest through the cache.
    static func write(_ bytes: UnsafeRawBufferPointer, to path: String, at offset: UInt64) throws -> Int {
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_DIRECT)
        guard fd >= 0, let base = bytes.baseAddress else { return 0 }
        defer { close(fd) }
        var buffer = pool.withLock { $0.popLast() }
        if let b = buffer, b.capacity < bytes.count {
            free(b.pointer)
            buffer = nil
        }
        if buffer == nil {
            var p: UnsafeMutableRawPointer?
            guard posix_memalign(&p, Int(alignment), bytes.count) == 0, let p else { return 0 }
            buffer = Buffer(pointer: p, capacity: bytes.count)
        }
        let b = buffer!
        defer {
            let keep =
                b.capacity <= keptBytes
                && pool.withLock { pool in
                    guard pool.count < kept else { return false }
                    pool.append(b)
                    return true
                }
            if !keep { free(b.pointer) }
        }
        b.pointer.copyMemory(from: base, byteCount: bytes.count)
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, b.pointer + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EINVAL { return done }
            guard n > 0 else { throw BlobFiles.error("cannot write \(path)") }
            done += n
            if n % Int(alignment) != 0 { return done }
        }
        return done
    }
}

import Foundation
import PeerlogCrypto
import PeerlogModel

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
        try Self.writeAll(fd, bytes, at: offset, path: partPath(id))
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
    /// a temporary file, which becomes `blobs/<hex id>` (kept as it is when that blob exists: the
    /// same bytes are stored once). `progress` gets the plaintext bytes read so far.
    package func store(
        from source: String, key: SecureBytes?, chunkBytes: UInt32 = BlobLayout.defaultChunkBytes,
        progress: (UInt64) -> Void = { _ in }
    ) throws -> (id: BlobID, layout: BlobLayout, hashes: [UInt8]) {
        try ensureDirectory()
        let input = source == "-" ? 0 : open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Self.error("cannot open \(source)") }
        defer { if input != 0 { close(input) } }
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
            let n = try Self.readFull(input, into: &buffer, count: Int(chunkBytes), path: source)
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
                hashes += BlobLayout.chunkHash(stored)
                try Self.writeAll(output, stored, at: offset, path: temporary)
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

    /// Reads a whole blob's chunk hashes from its file (to serve them, or check the file).
    package func hashes(of id: BlobID, layout: BlobLayout) throws -> [UInt8] {
        var hashes = [UInt8]()
        hashes.reserveCapacity(layout.chunkCount * 32)
        for i in 0..<layout.chunkCount {
            let chunk = try read(id, at: layout.storedOffset(ofChunk: i), count: layout.storedBytes(ofChunk: i))
            hashes += chunk.withUnsafeBytes(BlobLayout.chunkHash)
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

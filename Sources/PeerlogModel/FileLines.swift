#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a regular file line by line through a fixed buffer: memory stays bounded by the
/// longest line allowed, whatever the file's size. Lines end at "\n"; the last may lack one.
public final class FileLines {
    /// The file's path, for errors.
    public let path: String
    /// The file's size in bytes when it was opened (for progress).
    public let size: Int
    /// A line longer than this (without its "\n") fails the read with an error naming it.
    public let maxLineBytes: Int
    private let fd: Int32
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var atEOF = false
    /// Bytes consumed so far (lines returned, with their "\n").
    public private(set) var offset = 0
    /// The number of the last line returned (1-based); 0 before the first.
    public private(set) var lineNumber = 0

    /// Opens `path`, which must be a regular file (it may be read more than once, so a pipe
    /// or a terminal is refused).
    public init(path: String, maxLineBytes: Int) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw ModelError(.keyFile, "cannot open \(path): \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw ModelError(.keyFile, "\(path) is not a regular file (it is read twice: first checked, then applied)")
        }
        self.fd = fd
        self.path = path
        self.size = Int(st.st_size)
        self.maxLineBytes = maxLineBytes
        // Room for the longest line and its "\n", and at least one large read.
        buffer = [UInt8](repeating: 0, count: max(maxLineBytes + 1, 65_536) + 65_536)
    }

    deinit { close(fd) }

    /// The next line (without its "\n"), or nil at the end of the file.
    public func next() throws -> String? {
        while true {
            if let newline = buffer[start..<end].firstIndex(of: 0x0a) {
                return try take(upTo: newline, consumed: newline + 1 - start)
            }
            if end - start > maxLineBytes { throw tooLong(lineNumber + 1) }
            if atEOF {
                guard end > start else { return nil }
                return try take(upTo: end, consumed: end - start)
            }
            try fill()
        }
    }

    private func take(upTo stop: Int, consumed: Int) throws -> String {
        guard stop - start <= maxLineBytes else { throw tooLong(lineNumber + 1) }
        lineNumber += 1
        let line = String(decoding: buffer[start..<stop], as: UTF8.self)
        start += consumed
        offset += consumed
        return line
    }

    private func tooLong(_ number: Int) -> ModelError {
        ModelError(
            .sizeLimitExceeded, "\(path) line \(number) is longer than \(maxLineBytes) bytes (maxImportLineBytes)")
    }

    /// Moves the unread part to the front and reads more after it.
    private func fill() throws {
        if start > 0 {
            let unread = end - start
            buffer.withUnsafeMutableBytes { raw in
                _ = memmove(raw.baseAddress!, raw.baseAddress! + start, unread)
            }
            start = 0
            end = unread
        }
        while true {
            let room = buffer.count - end
            let n = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + end, room) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ModelError(.keyFile, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { atEOF = true }
            end += n
            return
        }
    }
}

/// A new file written in pieces, that appears whole or not at all: the bytes go to a
/// temporary file beside it, which `commit()` syncs and links into place (never replacing
/// an existing file). Dropped without `commit()`, it leaves nothing behind.
public final class NewFile {
    /// The file to create.
    public let path: String
    private let temporary: String
    private var fd: Int32
    private var pending: [UInt8] = []
    /// Bytes written so far.
    public private(set) var written = 0
    private static let flushBytes = 1 << 20

    /// Creates the temporary file; fails if `path` exists already.
    public init(path: String, mode: mode_t) throws {
        if FileIO.exists(path) { throw ModelError(.keyFile, "\(path) already exists; refusing to overwrite it") }
        self.path = path
        temporary = path + ".tmp-\(getpid())"
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard fd >= 0 else {
            throw ModelError(.keyFile, "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        _ = fchmod(fd, mode)  // the umask may have narrowed it
        pending.reserveCapacity(Self.flushBytes + 65_536)
    }

    deinit {
        if fd >= 0 {
            close(fd)
            unlink(temporary)
        }
    }

    /// Appends `line` and a "\n".
    public func write(line: String) throws {
        pending += line.utf8
        pending.append(0x0a)
        if pending.count >= Self.flushBytes { try flush() }
    }

    private func flush() throws {
        var done = 0
        while done < pending.count {
            let n = pending.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ModelError(.keyFile, "cannot write \(temporary): \(String(cString: strerror(errno)))")
            }
            done += n
        }
        written += pending.count
        pending.removeAll(keepingCapacity: true)
    }

    /// Flushes, syncs and links the file into place (failing if `path` appeared meanwhile),
    /// then removes the temporary name and syncs the directory.
    public func commit() throws {
        try flush()
        guard fsync(fd) == 0 else {
            throw ModelError(.keyFile, "fsync \(temporary) failed: \(String(cString: strerror(errno)))")
        }
        guard link(temporary, path) == 0 else {
            throw ModelError(.keyFile, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        close(fd)
        fd = -1
        unlink(temporary)
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dfd = open(dir.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : dir, O_RDONLY)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }
}

import PeerlogCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One secret per file, mode 0600, owned by the current user; refused if anyone else may read it.
///
/// Format: one line `peerlog-secret v1 <kind>`, then one line of lower-case hex, then a newline.
public enum KeyFile {
    /// What a key file holds, named on its first line (docs/PROTOCOL.md §7); reading a file of
    /// another kind fails.
    public enum Kind: String, Sendable {
        /// The identity's Ed25519 seed (`identity.key`).
        case identitySeed = "ed25519-identity-seed"
        /// The device's Ed25519 seed (`device.key`).
        case deviceSeed = "ed25519-device-seed"
        /// The device's X25519 Noise private key (`noise.key`).
        case noiseKey = "x25519-noise-key"
    }

    /// Writes a secret atomically (temporary file created 0600, fsync, rename). Refuses to overwrite.
    public static func write(_ secret: SecureBytes, kind: Kind, to path: String) throws {
        var text =
            Array("peerlog-secret v1 \(kind.rawValue)\n".utf8) + Array(secret.withUnsafeBytes { hexString($0) }.utf8)
            + [0x0a]
        defer { SecureBytes.zero(&text) }
        try FileIO.writeNew(text, to: path, mode: 0o600)
    }

    /// Reads a secret after checking ownership and permissions.
    public static func read(_ path: String, kind: Kind) throws -> SecureBytes {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw ModelError(.keyFile, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let mode = st.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw ModelError(
                .keyFile,
                "\(path) has permissions \(String(mode, radix: 8)); secret key files must be 600 (run: chmod 600 \(path))"
            )
        }
        guard st.st_uid == getuid() else {
            throw ModelError(.keyFile, "\(path) is owned by uid \(st.st_uid), not by the current user")
        }
        var data = try FileIO.read(path, maxBytes: 4096)
        defer { SecureBytes.zero(&data) }
        let lines = data.split(separator: 0x0a, omittingEmptySubsequences: false)
        guard lines.count == 3, lines[2].isEmpty, Array(lines[0]) == Array("peerlog-secret v1 \(kind.rawValue)".utf8)
        else {
            throw ModelError(.keyFile, "\(path) is not a peerlog \(kind.rawValue) file")
        }
        guard var raw = bytes(fromHex: String(decoding: lines[1], as: UTF8.self)), raw.count == 32 else {
            throw ModelError(.keyFile, "\(path) does not hold 32 hex-encoded bytes")
        }
        defer { SecureBytes.zero(&raw) }
        return SecureBytes(raw)
    }
}

/// Small POSIX file helpers with clear errors.
public enum FileIO {
    /// Whether anything exists at `path` (access(2) `F_OK`; a dangling symbolic link counts as
    /// missing).
    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Creates a directory (and parents) with `mode` if missing.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, mode) != 0 && errno != EEXIST {
                throw ModelError(.keyFile, "cannot create directory \(partial): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The whole file at `path`. Throws a `ModelError` when it cannot be opened or read, or is
    /// larger than `maxBytes`.
    public static func read(_ path: String, maxBytes: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw ModelError(.keyFile, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ModelError(.keyFile, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            out += chunk[0..<n]
            guard out.count <= maxBytes else {
                throw ModelError(.sizeLimitExceeded, "\(path) is larger than \(maxBytes) bytes")
            }
        }
        return out
    }

    /// Writes a new file atomically: temporary file with `mode`, fsync, rename, fsync directory.
    public static func writeNew(_ data: [UInt8], to path: String, mode: mode_t, overwrite: Bool = false) throws {
        if !overwrite && exists(path) { throw ModelError(.keyFile, "\(path) already exists; refusing to overwrite it") }
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard fd >= 0 else { throw ModelError(.keyFile, "cannot create \(tmp): \(String(cString: strerror(errno)))") }
        var ok = false
        defer { if !ok { unlink(tmp) } }
        _ = fchmod(fd, mode)  // the umask may have narrowed or (never) widened it
        var written = 0
        while written < data.count {
            let n = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                close(fd)
                throw ModelError(.keyFile, "cannot write \(tmp): \(String(cString: strerror(errno)))")
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            close(fd)
            throw ModelError(.keyFile, "fsync \(tmp) failed: \(String(cString: strerror(errno)))")
        }
        close(fd)
        guard rename(tmp, path) == 0 else {
            throw ModelError(.keyFile, "cannot rename \(tmp) to \(path): \(String(cString: strerror(errno)))")
        }
        ok = true
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dfd = open(dir.isEmpty ? "." : dir, O_RDONLY)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }
}

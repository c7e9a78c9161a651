import Foundation
import PeerlogChannel
import PeerlogCrypto
import PeerlogModel
import Synchronization

/// The opt-in key log (docs/PROTOCOL.md §17.5), like TLS's SSLKEYLOGFILE: one line per
/// connection, written by both sides when `PEERLOG_KEYLOGFILE` names a file:
///
///     PEERLOG_NOISE_KEYS <initiator ephemeral> <initiator→responder key> <responder→initiator key> <initiator device> <responder device>
///
/// (keys as 64 lowercase hex digits, devices in text form). Anyone holding the file can
/// decrypt the logged connections, so it is never written unless asked for.
package struct KeyLogEntry: Hashable, Sendable {
    /// The first word of a key log line (§17.5); `parse` skips lines with another first word.
    package static let label = "PEERLOG_NOISE_KEYS"
    /// The environment variable naming the key log file; unset or empty: no key log.
    package static let environmentVariable = "PEERLOG_KEYLOGFILE"

    /// The initiator's ephemeral package key and the transport keys at nonce 0 of both directions (Split's c1 and c2,
    /// §14.3), 32 bytes each.
    package let keys: TransportKeys
    /// The device that dialed (sent handshake message 1).
    package let initiator: DeviceID
    /// The device that accepted the connection.
    package let responder: DeviceID

    /// An entry from its parts; nothing is checked (`parse` checks what it reads).
    package init(keys: TransportKeys, initiator: DeviceID, responder: DeviceID) {
        self.keys = keys
        self.initiator = initiator
        self.responder = responder
    }

    /// The entry as one key log line (§17.5), without the newline.
    package var line: String {
        [
            Self.label, hexString(keys.initiatorEphemeral), hexString(keys.initiatorToResponder),
            hexString(keys.responderToInitiator),
            initiator.string, responder.string,
        ].joined(separator: " ")
    }

    /// Equal when the lines are: same keys and devices.
    package static func == (l: KeyLogEntry, r: KeyLogEntry) -> Bool { l.line == r.line }
    /// Hashes the line, like `==` compares it.
    package func hash(into h: inout Hasher) { h.combine(line) }

    /// Parses a key log; other lines (comments, other labels) are skipped, malformed ones of
    /// our label are an error naming the line.
    package static func parse(_ text: String) throws -> [KeyLogEntry] {
        var out = [KeyLogEntry]()
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let words = raw.split(separator: " ").map(String.init)
            guard words.first == label else { continue }
            guard words.count == 6, let e = bytes(words[1]), let i2r = bytes(words[2]), let r2i = bytes(words[3]),
                let initiator = try? DeviceID(string: words[4]), let responder = try? DeviceID(string: words[5])
            else {
                throw CaptureError(
                    .malformedKeyLog, offset: nil,
                    "key log line \(n + 1) is malformed (expected \(label) and five fields)")
            }
            out.append(
                KeyLogEntry(
                    keys: TransportKeys(initiatorEphemeral: e, initiatorToResponder: i2r, responderToInitiator: r2i),
                    initiator: initiator, responder: responder))
        }
        return out
    }

    private static func bytes(_ hex: String) -> [UInt8]? {
        guard hex.count == 64 else { return nil }
        var out = [UInt8]()
        var chars = hex.makeIterator()
        while let a = chars.next(), let b = chars.next() {
            guard let v = UInt8(String([a, b]), radix: 16) else { return nil }
            out.append(v)
        }
        return out
    }
}

/// Appends key log lines to the file named by `PEERLOG_KEYLOGFILE` (mode 0600, O_APPEND so
/// several processes can share it).
package enum KeyLogFile {
    /// The file `PEERLOG_KEYLOGFILE` names, read from the environment on each call; nil when unset or empty.
    package static var path: String? {
        ProcessInfo.processInfo.environment[KeyLogEntry.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// One append at a time in this process (O_APPEND keeps lines whole across processes).
    private static let appending = Mutex(())

    /// Logs one established connection if the key log is on; errors are returned, not thrown
    /// (a key log must never break a connection).
    @discardableResult
    package static func append(_ entry: KeyLogEntry) -> String? {
        guard let path else { return nil }
        return append(lines: [entry.line], to: path)
    }

    /// Appends `lines` to the key log at `path` in one write (created with mode 0600); the
    /// problem as one line, or nil. Epoch key lines (`peerlog group keys --append`) go the same way.
    package static func append(lines: [String], to path: String) -> String? {
        appending.withLock { _ in appendUnlocked(lines: lines, to: path) }
    }

    private static func appendUnlocked(lines: [String], to path: String) -> String? {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard fd >= 0 else { return "cannot open key log \(path): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return n == bytes.count ? nil : "cannot write key log \(path): \(String(cString: strerror(errno)))"
    }
}

import PeerlogCapture
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// Epoch keys handed to the tools that show bodies (docs/PROTOCOL.md §17.6): one line per key,
///
///     PEERLOG_EPOCH_KEY <group> <key>
///
/// in the same file as Noise key-log lines if you like (each reader skips the other's lines).
/// `peerlog group keys` writes them from a home.
package struct EpochKeyLog: Sendable {
    /// The first word of an epoch key line.
    package static let label = "PEERLOG_EPOCH_KEY"

    /// The keys by group and key id.
    package private(set) var keys: [GroupID: [EpochKeyID: EpochKey]] = [:]

    /// No keys: every sealed body stays sealed.
    package init() {}

    /// The keys of `pairs`.
    package init(_ pairs: [(group: GroupID, key: EpochKey)]) {
        for (group, key) in pairs { keys[group, default: [:]][key.id] = key }
    }

    /// How many keys it holds.
    package var count: Int { keys.values.reduce(0) { $0 + $1.count } }

    /// One key log line, without the newline: group in §2 text form, the key as 64 lowercase hex digits.
    package static func line(group: GroupID, key: EpochKey) -> String {
        "\(label) \(group.string) \(key.secret.withUnsafeBytes { hexString(Array($0)) })"
    }

    /// Parses a key log; lines with another first word are skipped, malformed ones of this
    /// label are an error naming the line.
    package static func parse(_ text: String) throws -> EpochKeyLog {
        var log = EpochKeyLog()
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let words = raw.split(separator: " ").map(String.init)
            guard words.first == label else { continue }
            guard words.count == 3, let group = try? GroupID(string: words[1]),
                let bytes = PeerlogCrypto.bytes(fromHex: words[2]),
                bytes.count == EpochKey.length, let key = try? EpochKey(secret: SecureBytes(bytes))
            else {
                throw CaptureError(
                    .malformedKeyLog, offset: nil,
                    "key log line \(n + 1) is malformed (expected \(label), a group id and 64 hex digits)")
            }
            log.keys[group, default: [:]][key.id] = key
        }
        return log
    }

    /// What the tools show for one receipt's body.
    package enum Opening: Equatable {
        /// Not sealed (a plaintext group, or a group operation).
        case plain
        /// Sealed under a key not given.
        case sealed(EpochKeyID)
        /// Opened: the body as its author wrote it.
        case opened(CBOR)
        /// Sealed under a given key, but it does not open: tampered or moved.
        case broken(String)
    }

    /// Opens `receipt`'s body when it is sealed (§22.3) under a key this log holds.
    package func open(_ receipt: Receipt) -> Opening {
        guard !receipt.type.hasPrefix("group."), let sealed = try? EncryptedBody(cbor: receipt.body) else {
            return .plain
        }
        guard let key = keys[receipt.group]?[sealed.keyID] else { return .sealed(sealed.keyID) }
        do { return .opened(try sealed.open(with: key, binding: .init(receipt))) } catch {
            return .broken("\(error)")
        }
    }
}

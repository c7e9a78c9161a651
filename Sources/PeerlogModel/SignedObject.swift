import PeerlogCrypto
import PeerlogEncoding

/// What a signature covers: a context string naming the kind of object, a zero byte, then
/// the exact payload bytes. The context keeps a signature on one kind from being valid on another.
public enum SignatureContext: String, Sendable, CaseIterable {
    /// Device certificates (§3.1), signed by the identity.
    case certificate = "peerlog/certificate/v1"
    /// Receipts (§3.2), signed by the author device.
    case receipt = "peerlog/receipt/v1"
    /// Single envelopes (§3.4), signed by the sequencer.
    case envelope = "peerlog/envelope/v1"
    /// A batched envelope's run header (§3.5).
    case envelopeRun = "peerlog/envelope-run/v1"
    /// Device revocations (§3.6), signed by the identity.
    case revocation = "peerlog/revocation/v1"
    /// A device's proof, in the channel handshake, that it holds its device key (§14.3): signed by
    /// the device over its identity and Noise static key.
    case deviceNoise = "peerlog/device-noise/v1"

    /// The bytes a signature covers: the context's ASCII ‖ 0x00 ‖ `payload` (docs/PROTOCOL.md §3).
    public func message(for payload: [UInt8]) -> [UInt8] { Array(rawValue.utf8) + [0] + payload }
}

/// The result of checking a signed object. Expected outcomes, so not thrown.
public enum VerificationResult: Equatable, Sendable {
    /// The signature (and, for a run item, the Merkle path) checks out.
    case valid
    /// It does not; the text says what failed, for logs and people.
    case invalid(String)

    /// True for `.valid`.
    public var isValid: Bool { self == .valid }
}

/// Helpers shared by the decoders of signed formats.
enum Fields {
    /// Decoder limits for payloads: they are small, flat and deterministic.
    static func payloadDecoder(maxBytes: Int) -> CBORDecoder {
        CBORDecoder(
            mode: .strict,
            limits: .init(
                maxDepth: Receipt.maxBodyDepth + 2, maxStringBytes: maxBytes, maxCollectionCount: maxBytes,
                maxInputBytes: maxBytes))
    }

    static func decode(_ bytes: [UInt8], what: @autoclosure () -> String, decoder: CBORDecoder) throws -> [CBOR: CBOR] {
        let value: CBOR
        do { value = try decoder.decode(bytes) } catch { throw ModelError(.malformedEncoding, "\(what()): \(error)") }
        guard case .map(let map) = value else { throw ModelError(.wrongShape, "\(what()) must be a CBOR map") }
        return map
    }

    /// Requires exactly `keys` to be present, so unknown fields cannot ride along under a signature.
    /// Refuses a signature that is not 64 bytes (`what`: "receipt", "certificate", …).
    static func requireSignatureLength(_ signature: [UInt8], of what: String) throws {
        guard signature.count == Ed25519.signatureLength else {
            throw ModelError(.wrongShape, "\(what) signature must be 64 bytes")
        }
    }

    /// `bytes` when it holds exactly `count` of them (a fixed-length id); else `fieldOutOfRange`.
    static func fixedLength(_ bytes: [UInt8], _ count: Int, what: String) throws -> [UInt8] {
        guard bytes.count == count else {
            throw ModelError(.fieldOutOfRange, "\(what) must be \(count) bytes, got \(bytes.count)")
        }
        return bytes
    }

    /// `value` as a map with exactly `keys` (text keys, none missing, none unknown).
    static func exactMap(_ value: CBOR, _ keys: [String], what: String) throws -> [CBOR: CBOR] {
        guard case .map(let map) = value else { throw ModelError(.wrongShape, "\(what) must be a CBOR map") }
        try requireKeys(map, keys, what: what)
        return map
    }

    static func requireKeys(_ map: [CBOR: CBOR], _ keys: [String], what: @autoclosure () -> String) throws {
        // The usual case, without building sets (a receipt and its envelope are checked several
        // times on their way in): as many keys as expected, each a text key among them. The
        // map's keys are distinct, so those are exactly the expected ones.
        if map.count == keys.count, map.keys.allSatisfy({ $0.textValue.map(keys.contains) ?? false }) { return }
        let what = what()
        let keys = Set(keys)
        let present = Set(map.keys.compactMap(\.textValue))
        guard present.count == map.count else { throw ModelError(.wrongShape, "\(what) has a non-text key") }
        if let missing = keys.subtracting(present).sorted().first {
            throw ModelError(.wrongShape, "\(what) lacks field \"\(missing)\"")
        }
        if let extra = present.subtracting(keys).sorted().first {
            throw ModelError(.wrongShape, "\(what) has unknown field \"\(extra)\"")
        }
    }

    static func bytes(_ map: [CBOR: CBOR], _ key: String, what: String, count: Int? = nil) throws -> [UInt8] {
        guard let b = map[.text(key)]?.bytesValue else {
            throw ModelError(.wrongShape, "\(what).\(key) must be a byte string")
        }
        if let count, b.count != count {
            throw ModelError(.fieldOutOfRange, "\(what).\(key) must be \(count) bytes, got \(b.count)")
        }
        return b
    }

    static func uint(_ map: [CBOR: CBOR], _ key: String, what: String) throws -> UInt64 {
        guard let v = map[.text(key)]?.unsignedValue else {
            throw ModelError(.wrongShape, "\(what).\(key) must be an unsigned integer")
        }
        return v
    }

    static func text(_ map: [CBOR: CBOR], _ key: String, what: String, maxBytes: Int) throws -> String {
        guard let s = map[.text(key)]?.textValue else {
            throw ModelError(.wrongShape, "\(what).\(key) must be a text string")
        }
        guard !s.isEmpty, s.utf8.count <= maxBytes else {
            throw ModelError(.fieldOutOfRange, "\(what).\(key) must be 1...\(maxBytes) bytes")
        }
        return s
    }

    static func version(_ map: [CBOR: CBOR], what: String) throws {
        let v = try uint(map, "v", what: what)
        guard v == 1 else {
            throw ModelError(.unsupportedVersion, "\(what) version \(v), this implementation reads version 1")
        }
    }

    /// Splits a signed container `{<payloadKey>: bstr, "sig": bstr(64), ...}`.
    static func container(
        _ bytes: [UInt8], payloadKey: String, extraKeys: [String] = [], maxBytes: Int
    ) throws -> (map: [CBOR: CBOR], payload: [UInt8], signature: [UInt8]) {
        guard bytes.count <= maxBytes else {
            throw ModelError(.sizeLimitExceeded, "\(payloadKey) container is \(bytes.count) bytes, limit \(maxBytes)")
        }
        let map = try decode(bytes, what: "\(payloadKey) container", decoder: payloadDecoder(maxBytes: maxBytes))
        try requireKeys(map, [payloadKey, "sig"] + extraKeys, what: "\(payloadKey) container")
        let payload = try Fields.bytes(map, payloadKey, what: "container")
        let sig = try Fields.bytes(map, "sig", what: "container", count: Ed25519.signatureLength)
        return (map, payload, sig)
    }
}

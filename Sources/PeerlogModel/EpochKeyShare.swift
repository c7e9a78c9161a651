import PeerlogCrypto
import PeerlogEncoding

/// The body of a `group.key` receipt (docs/PROTOCOL.md §22.4): one epoch key sealed to a list of
/// devices. With `rotate` it starts a new epoch at the receipt's place in the committed order;
/// without, it hands an existing key to devices that lack it (a new member's or a newly linked
/// device, or history).
///
/// Encoded `{"key": bstr(16), "rotate": bool, "sealed": [sealed epoch key, …]}`, at most
/// ``maxRecipients`` entries, each to another device, sorted by device id.
public struct EpochKeyShare: Hashable, Sendable {
    /// The receipt type.
    public static let receiptType = "group.key"
    /// Most devices one `group.key` receipt seals to (256 entries, about 35 KiB of body).
    public static let maxRecipients = 256

    /// The key's id.
    public let keyID: EpochKeyID
    /// Whether the key starts a new epoch.
    public let rotate: Bool
    /// One box per device, sorted by device id.
    public let sealed: [SealedEpochKey]

    /// Seals `key` to each of `devices` (device id and the X25519 key its certificate names).
    /// Throws a `ModelError` for more than ``maxRecipients`` distinct devices, none, or a low-order key.
    public static func seal(
        _ key: EpochKey, group: GroupID, rotate: Bool, to devices: [(DeviceID, X25519.PublicKey)]
    ) throws -> EpochKeyShare {
        var seen = Set<DeviceID>()
        let unique = devices.filter { seen.insert($0.0).inserted }
        let boxes = try unique.map { try SealedEpochKey.seal(key, group: group, to: $0.0, noiseKey: $0.1) }
        return try EpochKeyShare(keyID: key.id, rotate: rotate, sealed: boxes)
    }

    /// Wraps fields: 1...``maxRecipients`` boxes, no device twice (they are sorted here).
    public init(keyID: EpochKeyID, rotate: Bool, sealed: [SealedEpochKey]) throws {
        guard (1...Self.maxRecipients).contains(sealed.count) else {
            throw ModelError(
                .fieldOutOfRange, "group.key seals to \(sealed.count) devices; accepted: 1...\(Self.maxRecipients)")
        }
        let sorted = sealed.sorted { $0.device.bytes.lexicographicallyPrecedes($1.device.bytes) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.device == b.device {
            throw ModelError(.wrongShape, "group.key seals to device \(a.device.short) twice")
        }
        self.keyID = keyID
        self.rotate = rotate
        self.sealed = sorted
    }

    /// Parses a `group.key` body; throws a `ModelError` for any other shape.
    public init(body: CBOR) throws {
        let what = "group.key body"
        let map = try Fields.exactMap(body, ["key", "rotate", "sealed"], what: what)
        guard case .bool(let rotate)? = map[.text("rotate")] else {
            throw ModelError(.wrongShape, "\(what).rotate must be a boolean")
        }
        guard case .array(let entries)? = map[.text("sealed")] else {
            throw ModelError(.wrongShape, "\(what).sealed must be an array")
        }
        guard entries.count <= Self.maxRecipients else {
            throw ModelError(
                .fieldOutOfRange, "group.key seals to \(entries.count) devices; accepted: 1...\(Self.maxRecipients)")
        }
        try self.init(
            keyID: EpochKeyID(bytes: Fields.bytes(map, "key", what: what)), rotate: rotate,
            sealed: entries.map(SealedEpochKey.init(cbor:)))
    }

    /// The receipt body.
    public var body: CBOR {
        .textMap(["key": .bytes(keyID.bytes), "rotate": .bool(rotate), "sealed": .array(sealed.map(\.cbor))])
    }

    /// The box sealed to `device`, if any.
    public func box(for device: DeviceID) -> SealedEpochKey? { sealed.first { $0.device == device } }
}

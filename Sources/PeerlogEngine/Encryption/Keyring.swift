import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// Epoch keys at rest (docs/PROTOCOL.md §22.6): each key this device opened is stored sealed
/// with XChaCha20-Poly1305 under `BLAKE2b-256(key: the device's X25519 secret, message:
/// "peerlog/epoch-key-store/v1")`, a random nonce first, group ‖ key id as associated data. A copy
/// of the store without the device's `noise.key` holds no readable key.
enum KeyringStorage {
    static let label = Array("peerlog/epoch-key-store/v1".utf8)

    static func storageKey(_ local: LocalDevice) -> SecureBytes {
        // 32-byte output and key: within BLAKE2b's limits, so this cannot throw.
        SecureBytes(try! BLAKE2b.hash(label, length: 32, key: local.noiseKey.rawRepresentation))
    }

    static func seal(_ key: EpochKey, group: GroupID, with storage: SecureBytes) throws -> [UInt8] {
        let nonce = SecureRandom.bytes(XChaChaPoly.nonceLength)
        var secret = key.secret.copyBytes()
        defer { SecureBytes.zero(&secret) }
        return nonce
            + (try XChaChaPoly.seal(secret, key: storage, nonce: nonce, authenticating: group.bytes + key.id.bytes))
    }

    static func open(_ sealed: [UInt8], group: GroupID, keyID: EpochKeyID, with storage: SecureBytes) throws -> EpochKey
    {
        guard sealed.count > XChaChaPoly.nonceLength else {
            throw ReplicaError(.storeCorrupt, "stored epoch key \(keyID) is truncated")
        }
        var secret: [UInt8]
        do {
            secret = try XChaChaPoly.open(
                Array(sealed.dropFirst(XChaChaPoly.nonceLength)), key: storage,
                nonce: Array(sealed.prefix(XChaChaPoly.nonceLength)), authenticating: group.bytes + keyID.bytes)
        } catch {
            throw ReplicaError(.storeCorrupt, "stored epoch key \(keyID) does not open with this device's key")
        }
        defer { SecureBytes.zero(&secret) }
        let key = try EpochKey(secret: SecureBytes(secret))
        guard key.id == keyID else { throw ReplicaError(.storeCorrupt, "stored epoch key \(keyID) is another key") }
        return key
    }

    /// The keys of `group` this device holds.
    static func keys(group: GroupID, db: StoreDB, local: LocalDevice) throws -> [EpochKeyID: EpochKey] {
        let storage = storageKey(local)
        var out: [EpochKeyID: EpochKey] = [:]
        for row in try db.epochKeys(group: group) {
            out[row.keyID] = try open(row.sealed, group: group, keyID: row.keyID, with: storage)
        }
        return out
    }
}

/// What a sealed operation does once opened (docs/PROTOCOL.md §22.5).
enum SealedOpening {
    /// The plaintext operation: `entity.put`, `entity.delete` or an application receipt.
    case opened(GroupOperation)
    /// This device does not hold the key yet: the receipt waits.
    case waiting(EpochKeyID)
    /// It does not open with the key it names, or its plaintext is no operation of its type: a
    /// bad receipt, rejected by every holder of the key.
    case bad(String)
}

extension GroupOperation {
    /// A `.sealed` operation opened with `keys` (the receipt gives the binding).
    func opening(_ r: Receipt, keys: (EpochKeyID) -> EpochKey?) -> SealedOpening {
        guard case .sealed(let type, let body) = self else { return .opened(self) }
        guard let key = keys(body.keyID) else { return .waiting(body.keyID) }
        let plain: CBOR
        do { plain = try body.open(with: key, binding: EncryptedBody.Binding(r)) } catch let e as ModelError
            where e.code == .malformedEncoding
        {
            // It opened: the plaintext is what is wrong (too deep, not deterministic): say so.
            return .bad("the sealed body opens with epoch key \(body.keyID), but its plaintext is refused: \(e.detail)")
        } catch {
            return .bad("the sealed body does not open with epoch key \(body.keyID)")
        }
        do {
            switch try GroupOperation(receiptType: type, body: plain) {
            case .sealed: return .opened(.application(type: type, body: plain))
            case let inner where !inner.changesGroupState: return .opened(inner)
            default: return .bad("a sealed body must hold an entity or application operation")
            }
        } catch {
            return .bad("the sealed body's plaintext: \(error.reason)")
        }
    }
}

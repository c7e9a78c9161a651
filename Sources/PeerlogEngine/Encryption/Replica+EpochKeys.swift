import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// The local side of group encryption (docs/PROTOCOL.md §22.5): sealing this device's writes,
/// starting epochs, and handing keys to member devices that lack them.
extension Replica {
    /// `op` as this device writes it at `counter`: in an encrypted group an entity or application
    /// operation is checked, then sealed under the group's current key; anything else is as is.
    func sealedForWrite(
        _ op: GroupOperation, to group: GroupID, state: GroupState?, counter: UInt64, in p: inout Pipeline
    ) throws -> GroupOperation {
        // Not a member's write: the rules refuse it as such, plain.
        guard let state, let encryption = state.encryption, op.isSealedInEncryptedGroups,
            state.activeRole(of: local.identity) != nil
        else { return op }
        do { try op.validate() } catch { throw ReplicaError(error) }
        // `epochStartIfKeyless` ran first, so a member's device holds a key in use.
        guard let key = try newestHeldKey(group, encryption, in: &p) else {
            throw ReplicaError(.epochKeyMissing, "this device holds no epoch key in use in group \(group)")
        }
        let binding = EncryptedBody.Binding(group: group, type: op.receiptType, author: local.device, counter: counter)
        return .sealed(type: op.receiptType, body: try EncryptedBody.seal(op.body, key: key, binding: binding))
    }

    /// A `group.key` rotation to write before `op`, and the state after it, when `op` is to be
    /// sealed and this device, an active member's, holds no key in use (a member invited by
    /// identity before a member's device shared one with it, or after a departure it has not
    /// heard the new epoch of): so a write never waits for another device (§22.5). Nil when
    /// not needed.
    func epochStartIfKeyless(
        before op: GroupOperation, in group: GroupID, state: GroupState?, in p: inout Pipeline
    ) throws -> (rotation: GroupOperation, state: GroupState)? {
        guard op.isSealedInEncryptedGroups, let state, let encryption = state.encryption,
            state.activeRole(of: local.identity) != nil
        else { return nil }
        if try newestHeldKey(group, encryption, in: &p) != nil { return nil }
        let rotation = GroupOperation.key(try rotation(group, state: state, in: &p))
        switch GroupRules.apply(rotation, sender: local.identity, device: local.device, group: group, to: state) {
        case .failure(let v): throw ReplicaError(v)
        case .success(let after): return (rotation, after)
        }
    }

    /// The newest key in use that this device holds: writes are sealed under it. Not always the
    /// newest in use: two members who wrote before any key reached them each started an epoch,
    /// and each writes under its own until the other's arrives, instead of starting more.
    func newestHeldKey(_ group: GroupID, _ encryption: GroupEncryption, in p: inout Pipeline) throws -> EpochKey? {
        let held = try p.epochKeys(group)
        return encryption.validKeys.reversed().lazy.compactMap { held[$0] }.first
    }

    /// A new epoch key for `group`, kept here and sealed to every device that should read the
    /// group now (`keyRecipients`), as the body of a `group.key` rotation.
    func rotation(_ group: GroupID, state: GroupState, in p: inout Pipeline) throws -> EpochKeyShare {
        let key = EpochKey()
        try p.addEpochKey(key, group: group)
        return try EpochKeyShare.seal(
            key, group: group, rotate: true, to: try keyRecipients(group, state: state, db: p.db))
    }

    /// The devices of the group's active members this replica knows, by certificate: authors of
    /// the group's receipts, this identity's devices, and this device; never a revoked one.
    func keyRecipients(_ group: GroupID, state: GroupState, db: StoreDB) throws -> [(DeviceID, X25519.PublicKey)] {
        let active = Set(state.members.values.filter { $0.status == .active }.map(\.identity))
        var certificates = [DeviceID: DeviceCertificate]()
        for (device, _) in try db.authorCounters(group: group) {
            if let c = try db.certificates(device: device).last { certificates[device] = c }
        }
        for d in try db.identityDevices(of: local.identity) { certificates[d.certificate.device] = d.certificate }
        certificates[local.device] = local.certificate
        var out = [(DeviceID, X25519.PublicKey)]()
        for (device, c) in certificates.sorted(by: { $0.key < $1.key }) where active.contains(c.identity) {
            guard !state.revokedDevices.contains(GroupRevokedDevice(identity: c.identity, device: device)),
                try db.revocation(of: device, by: c.identity) == nil
            else { continue }
            out.append((device, c.noiseKey))
        }
        return Array(out.prefix(EpochKeyShare.maxRecipients))
    }

    /// Starts a new epoch in `group` now (on demand or on a schedule, §22.5): a fresh key sealed
    /// to the devices of its active members this replica knows. Refused in a plaintext group,
    /// and by the rules when this device is not an active member's.
    @discardableResult
    public func rotateEpochKey(of group: GroupID) throws -> AppendResult {
        var result: AppendResult?
        _ = try write { p in
            if try p.isTombstoned(group) { throw ReplicaError(.groupDeleted, "group \(group) was deleted") }
            let state = try self.fold(group: group, view: .tentative, db: p.db, entities: .none).state
            guard let state, state.encryption != nil else {
                throw ReplicaError(
                    .invalidOperation, "group \(group) is not encrypted: it has no epoch keys to rotate")
            }
            if state.activeRole(of: self.local.identity) == nil {
                throw ReplicaError(.notAMember, "this identity is not an active member of group \(group)")
            }
            var position = try self.localWritePosition(in: group, pipeline: p)
            let receipt = try self.signAndStore(
                .key(try self.rotation(group, state: state, in: &p)), to: group, at: &position, in: &p)
            try p.settle()
            result = AppendResult(receipt: receipt, seq: try p.db.committedSeq(of: receipt.cid))
        }
        return result!
    }

    /// Starts a new epoch in `group` when its tentative view has no key in use and this device
    /// is an active member's (after a departure it did not write).
    func rotateEpochIfDue(_ group: GroupID) throws {
        _ = try write { p in
            let view = try self.fold(group: group, view: .tentative, db: p.db, entities: .none)
            guard let state = view.state, state.status == .active, state.encryption?.validKeys.isEmpty == true,
                state.activeRole(of: self.local.identity) != nil
            else { return }
            var position = try self.localWritePosition(in: group, pipeline: p)
            _ = try self.signAndStore(
                .key(try self.rotation(group, state: state, in: &p)), to: group, at: &position, in: &p)
        }
    }

    /// Hands `certificate`'s device the keys it may read in `group`: the keys in use, and every
    /// earlier one this device holds when the group keeps history or the device is one of this
    /// identity's own (a linked laptop, a restored backup: it reads what its siblings read, and
    /// its state hash is theirs). Writes one `group.key` receipt per key
    /// (not rotating); nothing when this device holds none of them, the device is no active or
    /// invited member's (an invitee proved by a pairing code gets them before it accepts), or
    /// it is revoked.
    public func shareEpochKeys(_ group: GroupID, with certificate: DeviceCertificate) throws {
        _ = try write { p in
            let view = try self.fold(group: group, view: .tentative, db: p.db, entities: .none)
            guard let state = view.state, let encryption = state.encryption, state.status == .active,
                state.activeRole(of: self.local.identity) != nil,
                [.active, .pending].contains(state.member(certificate.identity)?.status),
                !state.revokedDevices.contains(
                    GroupRevokedDevice(identity: certificate.identity, device: certificate.device)),
                try p.db.revocation(of: certificate.device, by: certificate.identity) == nil
            else { return }
            let held = try p.epochKeys(group)
            // Every key in use, not only the newest: a member who wrote before any key reached it
            // started an epoch of its own, and the keys before it still open current writes.
            let sibling = certificate.identity == self.local.identity
            var ids = encryption.history || sibling ? Array(held.keys).sorted() : []
            for id in encryption.validKeys where !ids.contains(id) { ids.append(id) }
            var position = try self.localWritePosition(in: group, pipeline: p, forMore: true)
            for id in ids {
                guard let key = held[id] else { continue }
                let share = try EpochKeyShare.seal(
                    key, group: group, rotate: false, to: [(certificate.device, certificate.noiseKey)])
                _ = try self.signAndStore(.key(share), to: group, at: &position, in: &p)
            }
        }
    }

    /// `shareEpochKeys(_:with:)` for every encrypted group this replica holds: a newly linked
    /// device of this identity reads them all.
    public func shareEpochKeys(with certificate: DeviceCertificate) throws {
        for group in try groupIDs() where try state(of: group, view: .tentative)?.encryption != nil {
            try shareEpochKeys(group, with: certificate)
        }
    }

    /// How many committed receipts of `group` wait for an epoch key this device does not hold
    /// (docs/PROTOCOL.md §22.5): they apply when it arrives.
    public func sealedWaitingCount(of group: GroupID) throws -> Int {
        try store.read { try $0.sealedWaitingCount(group: group) }
    }

    /// How many epoch keys of `group` this device holds.
    public func epochKeyCount(of group: GroupID) throws -> Int {
        try store.read { try $0.epochKeys(group: group).count }
    }

    /// The epoch keys this device holds, by group (all groups when `group` is nil), in the order
    /// they arrived: for `peerlog group keys`, which hands them to the tools that show bodies.
    package func heldEpochKeys(of group: GroupID? = nil) throws -> [(group: GroupID, key: EpochKey)] {
        let groups = try group.map { [$0] } ?? groupIDs()
        return try store.read { db in
            var out = [(group: GroupID, key: EpochKey)]()
            for g in groups {
                let keys = try KeyringStorage.keys(group: g, db: db, local: local)
                for row in try db.epochKeys(group: g) { if let k = keys[row.keyID] { out.append((g, k)) } }
            }
            return out
        }
    }
}

extension GroupOperation {
    /// Entity and application operations: their bodies are sealed in an encrypted group (§22.3).
    var isSealedInEncryptedGroups: Bool {
        switch self {
        case .entityPut, .entityDelete, .entityWrite, .application: true
        default: false
        }
    }
}

extension Replica {
    /// The plaintext body of `receipt`: in an encrypted group a sealed body opened with the keys
    /// this device holds (for an `application` event's receipt, say); otherwise the body as is.
    /// Throws `epochKeyMissing` when this device lacks the key, `invalidOperation` when the body
    /// does not open with it.
    public func plaintextBody(of receipt: Receipt) throws -> CBOR {
        guard let sealed = try sealedBodies([receipt], in: receipt.group).first ?? nil else { return receipt.body }
        let keys = try store.read { try KeyringStorage.keys(group: receipt.group, db: $0, local: local) }
        guard let key = keys[sealed.keyID] else {
            throw ReplicaError(.epochKeyMissing, "this device does not hold epoch key \(sealed.keyID) of this group")
        }
        do { return try sealed.open(with: key, binding: EncryptedBody.Binding(receipt)) } catch {
            throw ReplicaError(.invalidOperation, "the sealed body does not open with epoch key \(sealed.keyID)")
        }
    }

    /// For each of `receipts` (all of `group`), its plaintext body when it is sealed and this
    /// device holds its key; nil otherwise (plaintext, or no key): what tools show beside the
    /// ciphertext. One state read and one key read for all.
    public func openedBodies(of receipts: [Receipt], in group: GroupID) throws -> [CBOR?] {
        let sealed = try sealedBodies(receipts, in: group)
        guard sealed.contains(where: { $0 != nil }) else { return receipts.map { _ in nil } }
        let keys = try store.read { try KeyringStorage.keys(group: group, db: $0, local: local) }
        return zip(receipts, sealed).map { r, s in
            guard let s, let key = keys[s.keyID] else { return nil }
            return try? s.open(with: key, binding: EncryptedBody.Binding(r))
        }
    }

    /// The sealed bodies among `receipts` in an encrypted group (nil for the others).
    private func sealedBodies(_ receipts: [Receipt], in group: GroupID) throws -> [EncryptedBody?] {
        guard try state(of: group, view: .tentative)?.encryption != nil else { return receipts.map { _ in nil } }
        return receipts.map { r in
            guard !r.type.hasPrefix("group."), GroupOperation.looksSealed(r.body) else { return nil }
            return try? EncryptedBody(cbor: r.body)
        }
    }
}

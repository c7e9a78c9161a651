import PeerlogCrypto
import PeerlogModel
import PeerlogStore

/// A device of this replica's identity, for `peerlog device list`.
public struct IdentityDeviceRecord: Sendable, Equatable {
    /// The device's certificate (name, device id, noise key, when it was linked).
    public let certificate: DeviceCertificate
    /// The revocation held for it, if it was revoked.
    public let revocation: DeviceRevocation?
    /// True for the device this replica runs on.
    public let isLocal: Bool
}

/// Why a revocation was refused.
public typealias RevocationError = CodedFailure<RevocationDomain>

/// The domain of ``RevocationError``.
public enum RevocationDomain: ErrorDomain {
    /// Its detail is a whole sentence.
    public static var wording: ErrorWording { .detail }
}

extension ErrorCode where Domain == RevocationError {
    /// The revocation's signature does not verify against its identity.
    public static let badSignature = Self("badSignature")
    /// Revoking the device this replica runs on.
    public static let ownDevice = Self("ownDevice")
    /// The identity already has `Replica.maxRevocationsPerIdentity` revocations stored.
    public static let limit = Self("limit")
}

extension Replica {
    /// Revocations stored per identity, at most: an identity revokes few devices in its life,
    /// and a peer's identity could otherwise grow every store it reaches without end (each is
    /// stored and passed on).
    public static let maxRevocationsPerIdentity = 1_024

    /// Stores a revocation after verifying its signature; true when it is new. Peers' and our
    /// own identity's revocations are all kept (a node refuses every revoked device). Refused
    /// beyond `maxRevocationsPerIdentity` for the identity.
    @discardableResult
    public func storeRevocation(_ revocation: DeviceRevocation) throws -> Bool {
        if case .invalid(let why) = revocation.verify() { throw RevocationError(.badSignature, why) }
        return try store.write { db in
            if try db.revocation(of: revocation.device, by: revocation.identity) != nil { return false }
            let held = try db.revocationCount(of: revocation.identity)
            guard held < Self.maxRevocationsPerIdentity else {
                throw RevocationError(
                    .limit,
                    "identity \(revocation.identity) already has \(held) revocations stored"
                        + " (maxRevocationsPerIdentity \(Self.maxRevocationsPerIdentity))")
            }
            return try db.insertRevocation(revocation)
        }
    }

    /// Signs (with this home's identity key) and stores a revocation of `device`, another device
    /// of this identity. Revoking this very device is refused. An already revoked device keeps
    /// its first revocation, which is returned.
    public func revoke(device: DeviceID) throws -> DeviceRevocation {
        guard device != local.device else {
            throw RevocationError(
                .ownDevice, "device \(device) is the device this home runs on; revoke it from another device")
        }
        if let held = try revocation(of: device, by: local.identity) { return held }
        let identityKey = try local.requireIdentityKey(for: "revoke devices")
        let revocation = try DeviceRevocation.issue(identityKey: identityKey, device: device, createdAt: clock())
        try storeRevocation(revocation)
        return revocation
    }

    /// Writes `group.device_revoked` (docs/PROTOCOL.md §9.1) with `revocation` in every group
    /// where this identity is an active member and the device is not yet revoked (tentative
    /// view), so every member refuses the device's receipts ordered after it. Returns those groups.
    /// Only this identity's revocations can be written (the rules refuse others).
    @discardableResult
    public func announce(_ revocation: DeviceRevocation) throws -> [GroupID] {
        guard revocation.identity == local.identity else { return [] }
        let revoked = GroupRevokedDevice(identity: revocation.identity, device: revocation.device)
        var written: [GroupID] = []
        for group in try groupIDs() {
            guard let state = try state(of: group, view: .tentative), state.status == .active,
                state.activeRole(of: local.identity) != nil, !state.revokedDevices.contains(revoked)
            else { continue }
            _ = try append(.deviceRevoked(revocation), to: group)
            written.append(group)
        }
        return written
    }

    /// The revocation of `device` by `identity` (default: this replica's identity), if held. A
    /// revocation applies only to a device whose certificate names the identity that signed it.
    public func revocation(of device: DeviceID, by identity: IdentityID? = nil) throws -> DeviceRevocation? {
        try store.read { try $0.revocation(of: device, by: identity ?? local.identity) }
    }

    /// Every revocation held, by identity then device bytes.
    public func revocations() throws -> [DeviceRevocation] { try store.read { try $0.revocations() } }

    /// Changes when a revocation is stored (by this or another process).
    package func revocationStamp() throws -> Int64 { try store.read { try $0.revocationCount() } }

    /// Records a device of this identity (a linked device, or one seen at a handshake): it
    /// shows in `identityDevices()`. The certificate must verify and name this identity.
    /// Returns whether the device was new here.
    @discardableResult
    public func recordDevice(_ certificate: DeviceCertificate) throws -> Bool {
        if case .invalid(let why) = certificate.verify() { throw ModelError(.badSignature, why) }
        guard certificate.identity == local.identity else {
            throw ModelError(
                .certificateMismatch,
                "certificate of device \(certificate.device) names identity \(certificate.identity), not ours")
        }
        let now = clock()
        return try store.write { try $0.insertIdentityDevice(certificate, at: now) }
    }

    /// The devices of this identity this replica knows of (this one always), oldest first, each
    /// with its revocation if revoked.
    public func identityDevices() throws -> [IdentityDeviceRecord] {
        try store.read { db in
            var certificates = try db.identityDevices(of: local.identity).map(\.certificate)
            if !certificates.contains(where: { $0.device == local.device }) {
                certificates.insert(local.certificate, at: 0)
            }
            return try certificates.map {
                IdentityDeviceRecord(
                    certificate: $0, revocation: try db.revocation(of: $0.device, by: local.identity),
                    isLocal: $0.device == local.device)
            }
        }
    }
}

extension Replica {
    /// The revocations a sync session sends a peer after hello: every one held, whoever the
    /// peer (few and small; a peer that holds them ignores the repeat).
    public func syncRevocations(for peer: DeviceCertificate) throws -> [[UInt8]] {
        try revocations().map(\.encoded)
    }
}

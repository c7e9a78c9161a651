import Foundation
import PeerlogEngine
import PeerlogModel

/// A device of this identity, as `peerlog device list` shows it.
public struct PeerlogDeviceRecord: Sendable, Hashable, Codable {
    /// The name in the device's certificate.
    public let name: String
    /// The device id (`b…` base32 of its signing key).
    public let device: String
    /// When the identity certified (linked) it, milliseconds since 1970.
    public let created: UInt64
    /// Whether a revocation of it is held.
    public let revoked: Bool
    /// When it was revoked (milliseconds since 1970), if it was.
    public let revokedAt: UInt64?
    /// True for the device this home runs on.
    public let current: Bool
}

/// A revocation this device signed, as `peerlog device revoke` reports it.
public struct PeerlogRevocation: Sendable, Hashable {
    /// The revoked device.
    public let device: DeviceID
    /// The identity that revoked it.
    public let identity: IdentityID
    /// When it was revoked, milliseconds since 1970.
    public let createdAt: UInt64
    /// The revocation container (docs/PROTOCOL.md §3.6), as stored and sent.
    public let encoded: [UInt8]
    /// What peers say when they refuse the device.
    public let reason: String
    /// The groups a `group.device_revoked` was written to by this call (those where this
    /// identity is an active member and the device was not yet revoked).
    public let groups: [GroupID]
}

extension Peerlog {
    /// The devices of this identity this replica knows of (this one, linked ones, and those seen
    /// in receipts or at handshakes), oldest first, with whether each is revoked.
    public func devices() async throws -> [PeerlogDeviceRecord] {
        try await call { [self] in
            try replica.identityDevices().map {
                PeerlogDeviceRecord(
                    name: $0.certificate.name, device: $0.certificate.device.string, created: $0.certificate.createdAt,
                    revoked: $0.revocation != nil, revokedAt: $0.revocation?.createdAt, current: $0.isLocal)
            }
        }
    }

    /// Signs a revocation of `device` with this home's identity key and stores it, and records it
    /// in every group where this identity is an active member (`group.device_revoked`: every
    /// member then rejects the device's receipts ordered after it). A running daemon on this
    /// home sends it to every peer and refuses the device from then on. Revoking
    /// this very device is refused (`.refused`); a device already revoked returns the revocation
    /// held. Any device id is accepted (a device this replica never saw can be revoked ahead).
    @discardableResult
    public func revokeDevice(_ device: DeviceID) async throws -> PeerlogRevocation {
        let keyPath = LocalDevice.paths(home: home).identity
        guard FileManager.default.fileExists(atPath: keyPath) else {
            throw PeerlogError(
                .refused, "revoking a device needs the identity key, and \(keyPath) does not exist on this device")
        }
        let revocation: DeviceRevocation
        let groups: [GroupID]
        do {
            revocation = try replica.revoke(device: device)
            groups = try replica.announce(revocation)
        } catch let error as RevocationError {
            throw PeerlogError(.refused, error.detail)
        } catch {
            throw PeerlogError(.storage, "\(error)")
        }
        signal.fire()
        return PeerlogRevocation(
            device: revocation.device, identity: revocation.identity, createdAt: revocation.createdAt,
            encoded: revocation.encoded, reason: revocation.reason, groups: groups)
    }

    /// Records a device linked to this identity (its certificate container, docs/PROTOCOL.md
    /// §3.1), so `devices()` lists it. The certificate must verify and name this identity.
    public func recordLinkedDevice(_ certificate: [UInt8]) async throws {
        let parsed: DeviceCertificate
        do { parsed = try DeviceCertificate(encoded: certificate) } catch {
            throw PeerlogError(.invalidValue, "not a device certificate: \(error)")
        }
        do { try replica.recordDevice(parsed) } catch let error as ModelError {
            throw PeerlogError(.invalidValue, "\(error)")
        } catch {
            throw PeerlogError(.storage, "\(error)")
        }
    }

    /// Whether this device was revoked by its identity (a revocation of it reached this
    /// replica): the reason peers give, or nil.
    public func revokedReason() async throws -> String? {
        try await call { [self] in try replica.revocation(of: device.device)?.reason }
    }
}

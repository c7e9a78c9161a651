import Foundation
import GRDB
import PeerlogModel

/// A device of this replica's identity, as `identity_devices` holds it.
package struct StoredIdentityDevice: Sendable, Equatable {
    /// The device's certificate (verified before it was stored).
    package let certificate: DeviceCertificate
    /// When this replica first learned of it (ms).
    package let firstSeen: UInt64
}

extension StoreDB {
    /// Stores a verified revocation; false when one of the device by the same identity was
    /// already held (the first is kept: any valid one revokes the device).
    @discardableResult
    package func insertRevocation(_ r: DeviceRevocation) throws -> Bool {
        try execute(
            "INSERT OR IGNORE INTO revocations (device, identity, created, encoded) VALUES (?, ?, ?, ?)",
            [r.device.bytes.blob, r.identity.bytes.blob, r.createdAt.sql, r.encoded.blob])
        return changes > 0
    }

    /// The revocation of `device` signed by `identity`, if held: the only one that applies to
    /// a device whose certificate names `identity`.
    package func revocation(of device: DeviceID, by identity: IdentityID) throws -> DeviceRevocation? {
        guard
            let row = try row(
                "SELECT encoded FROM revocations WHERE identity = ? AND device = ?",
                [identity.bytes.blob, device.bytes.blob])
        else {
            return nil
        }
        return try DeviceRevocation(encoded: (row["encoded"] as Data).bytes)
    }

    /// Every revocation held, by identity then device bytes.
    package func revocations() throws -> [DeviceRevocation] {
        try rows("SELECT encoded FROM revocations ORDER BY identity, device").map {
            try DeviceRevocation(encoded: ($0["encoded"] as Data).bytes)
        }
    }

    /// Revocations held signed by `identity`.
    package func revocationCount(of identity: IdentityID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM revocations WHERE identity = ?", [identity.bytes.blob]) ?? 0)
    }

    /// Changes when a revocation is stored (cheap: a count).
    package func revocationCount() throws -> Int64 { try int("SELECT COUNT(*) FROM revocations") ?? 0 }

    /// Records a (verified) certificate of this replica's identity; a device already held keeps
    /// its first certificate and `first_seen`.
    /// Returns whether the device was new here.
    @discardableResult
    package func insertIdentityDevice(_ c: DeviceCertificate, at now: UInt64) throws -> Bool {
        try execute(
            """
            INSERT OR IGNORE INTO identity_devices (device, identity, name, created, certificate, first_seen)
            VALUES (?, ?, ?, ?, ?, ?)
            """,
            [c.device.bytes.blob, c.identity.bytes.blob, c.name, c.createdAt.sql, c.encoded.blob, now.sql])
        return changes > 0
    }

    /// The devices of `identity` held, oldest certificate first.
    package func identityDevices(of identity: IdentityID) throws -> [StoredIdentityDevice] {
        try rows(
            "SELECT certificate, first_seen FROM identity_devices WHERE identity = ? ORDER BY created, device",
            [identity.bytes.blob]
        ).map {
            StoredIdentityDevice(
                certificate: try DeviceCertificate(encoded: ($0["certificate"] as Data).bytes),
                firstSeen: UInt64(sql: $0["first_seen"]))
        }
    }
}

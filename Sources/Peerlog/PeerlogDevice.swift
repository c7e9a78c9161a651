import PeerlogModel

/// This device as the keys in a home describe it: what `peerlog id` prints and what others
/// need to reach or recognize it.
public struct PeerlogDevice: Sendable, Hashable {
    /// The person (or app account) the device acts for; what others invite.
    public let identity: IdentityID
    /// The device's key.
    public let device: DeviceID
    /// The name other devices see.
    public let name: String
    /// The device's Noise static public key (X25519), as the certificate binds it.
    public let noiseKey: [UInt8]
    /// When the certificate was issued (milliseconds since 1970).
    public let createdAt: UInt64
    /// The certificate's content id.
    package let certificateCID: CID
    /// The certificate as signed (its container bytes).
    public let certificate: [UInt8]
    /// Where the home keeps the certificate.
    package let certificatePath: String

    init(_ d: LocalDevice, home: String) {
        identity = d.identity
        device = d.device
        name = d.certificate.name
        noiseKey = d.certificate.noiseKey.rawRepresentation
        createdAt = d.certificate.createdAt
        certificateCID = d.certificate.cid
        certificate = d.certificate.encoded
        certificatePath = LocalDevice.paths(home: home).certificate
    }
}

extension Peerlog {
    /// Creates a new identity and this device's keys and certificate in `home` (created,
    /// 0700, if missing), without opening a store: `peerlog init`. The device is named
    /// `deviceName` (default: the host name). A home that holds keys already is refused.
    @discardableResult
    package static func initialize(home: String, deviceName: String? = nil) throws -> PeerlogDevice {
        let name = try checkedDeviceName(deviceName)
        do {
            let device = try LocalDevice.generate(name: name, createdAt: WallClock.nowMillis())
            try device.save(home: home)
            return PeerlogDevice(device, home: home)
        } catch {
            throw PeerlogError(.home, "\(error)")
        }
    }

    /// Copies the keys of `source` (another home of the same device, e.g. another process of
    /// one relay) into `home`, which must hold none yet: `peerlog relay init --key-from`.
    @discardableResult
    package static func initialize(home: String, copyingKeysFrom source: String) throws -> PeerlogDevice {
        let device: LocalDevice
        do { device = try LocalDevice.load(home: source) } catch {
            throw PeerlogError(.home, "cannot read the relay keys in \(source): \(error)")
        }
        do { try device.save(home: home) } catch { throw PeerlogError(.home, "\(error)") }
        return PeerlogDevice(device, home: home)
    }

    /// The device whose keys `home` holds, read and cross-checked without opening the store:
    /// `peerlog id`. Fails when the home holds no identity or its keys do not match.
    public static func deviceInfo(home: String) throws -> PeerlogDevice {
        do { return PeerlogDevice(try LocalDevice.load(home: home), home: home) } catch {
            throw PeerlogError(.home, "\(error)")
        }
    }

    /// `deviceName`, or the host name when nil, if it is 1...`DeviceCertificate.maxNameBytes`
    /// bytes of UTF-8; otherwise a `PeerlogError` with `code`. Every way of making a device
    /// (init, open with create, join, restore) checks the name here.
    static func checkedDeviceName(_ deviceName: String?, code: PeerlogError.Code = .home) throws -> String {
        let name = deviceName ?? DeviceCertificate.defaultName()
        guard !name.isEmpty, name.utf8.count <= DeviceCertificate.maxNameBytes else {
            throw PeerlogError(
                code,
                "the device name must be 1...\(DeviceCertificate.maxNameBytes) bytes of UTF-8, not \(name.utf8.count)")
        }
        return name
    }
}

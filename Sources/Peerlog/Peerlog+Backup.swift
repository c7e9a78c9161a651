import PeerlogCrypto
import PeerlogModel

extension Peerlog {
    /// Writes the identity key of `home`, sealed with `passphrase`, to a new file at `path`
    /// (mode 0600, written atomically): `peerlog identity export`. The file is the identity
    /// backup of docs/PROTOCOL.md §21 (Argon2id, 3 passes over 128 MiB, then
    /// XChaCha20-Poly1305); anyone with the file and the passphrase can add devices to the
    /// identity, so choose a passphrase that cannot be guessed. Device keys are not in it.
    ///
    /// Throws a ``PeerlogError``: ``PeerlogError/Code-swift.struct/file`` when `path` exists
    /// (a backup is never overwritten) or cannot be written;
    /// ``PeerlogError/Code-swift.struct/home`` when `home` holds no identity;
    /// ``PeerlogError/Code-swift.struct/invalidValue`` for a passphrase outside 1...1024 bytes.
    public static func exportIdentity(home: String, to path: String, passphrase: String) throws {
        if FileIO.exists(path) { throw PeerlogError(.file, "\(path) already exists; refusing to overwrite it") }
        do { try IdentityBackup.checkPassphrase(passphrase) } catch { throw PeerlogError(.invalidValue, "\(error)") }
        let device: LocalDevice
        do { device = try LocalDevice.load(home: home) } catch { throw PeerlogError(.home, "\(error)") }
        let backup: IdentityBackup
        do {
            backup = try IdentityBackup.seal(
                identityKey: try device.requireIdentityKey(for: "export the identity"), passphrase: passphrase,
                createdAt: WallClock.nowMillis())
        } catch { throw PeerlogError(.storage, "cannot seal the identity backup: \(error)") }
        do { try FileIO.writeNew(backup.encoded, to: path, mode: 0o600) } catch {
            throw PeerlogError(.file, "\(error)")
        }
    }

    /// The identity an identity backup file belongs to, read without the passphrase (the file's
    /// header is public). Throws a ``PeerlogError`` (``PeerlogError/Code-swift.struct/file``)
    /// when the file cannot be read or is not a valid backup (malformed, too large, or asking
    /// for Argon2id costs beyond the limits of docs/PROTOCOL.md §21).
    public static func identityInBackup(at path: String) throws -> IdentityID {
        try readBackup(path).identity
    }

    /// Restores the identity in the backup file at `path` (made by ``exportIdentity(home:to:passphrase:)``)
    /// into `home` as a new device of that identity: `peerlog init --restore`. The device gets
    /// fresh signing and Noise keys and a certificate signed by the restored identity key, named
    /// `deviceName` (default: the host name), saved like `peerlog init` saves it.
    /// Other devices accept it as they accept any certified device of the identity.
    ///
    /// Everything is checked before anything is written: a home that already holds keys
    /// (``PeerlogError/Code-swift.struct/home``), an unreadable or malformed file
    /// (``PeerlogError/Code-swift.struct/file``), a passphrase outside 1...1024 bytes
    /// (``PeerlogError/Code-swift.struct/invalidValue``), and a passphrase that does not open
    /// the file (``PeerlogError/Code-swift.struct/wrongPassphrase``: "wrong passphrase or
    /// damaged file"). On any of these the home is neither created nor changed.
    @discardableResult
    public static func initialize(
        home: String, restoring path: String, passphrase: String, deviceName: String? = nil
    ) throws -> PeerlogDevice {
        let name = try checkedDeviceName(deviceName, code: .invalidValue)
        let p = LocalDevice.paths(home: home)
        for file in [p.identity, p.device, p.noise, p.certificate] where FileIO.exists(file) {
            throw PeerlogError(.home, "\(file) already exists: \(home) is already initialised")
        }
        let backup = try readBackup(path)
        do { try IdentityBackup.checkPassphrase(passphrase) } catch { throw PeerlogError(.invalidValue, "\(error)") }
        let identityKey: Ed25519.PrivateKey
        do { identityKey = try backup.open(passphrase: passphrase) } catch let error as ModelError
            where error.code == .wrongPassphrase
        {
            throw PeerlogError(
                .wrongPassphrase, "wrong passphrase or damaged file: \(path) does not open with this passphrase")
        } catch {
            throw PeerlogError(.file, "cannot restore \(path): \(error)")
        }
        do {
            let device = try LocalDevice.newDevice(
                identityKey: identityKey, name: name, createdAt: WallClock.nowMillis())
            try device.save(home: home)
            return PeerlogDevice(device, home: home)
        } catch {
            throw PeerlogError(.home, "\(error)")
        }
    }

    private static func readBackup(_ path: String) throws -> IdentityBackup {
        do {
            return try IdentityBackup(encoded: try FileIO.read(path, maxBytes: IdentityBackup.maxFileBytes))
        } catch let error as ModelError where error.code == .keyFile {
            throw PeerlogError(.file, error.detail)
        } catch {
            throw PeerlogError(.file, "\(path) is not a usable identity backup: \(error)")
        }
    }
}

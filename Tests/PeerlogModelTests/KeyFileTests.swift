import Foundation
import PeerlogCrypto
import PeerlogModel
import PeerlogTestSupport
import Testing

struct KeyFileTests {
    @Test func saveLoadRoundTrip() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let home = dir + "/nested/home"
        let d = try LocalDevice.generate(name: "box", createdAt: 42)
        try d.save(home: home)
        let loaded = try LocalDevice.load(home: home)
        #expect(loaded.certificate == d.certificate)
        #expect(
            loaded.identityKey?.publicKey == d.identityKey?.publicKey && loaded.identityKey != nil
                && loaded.signingKey.seed == d.signingKey.seed)
        let paths = LocalDevice.paths(home: home)
        for secret in [paths.identity, paths.device, paths.noise] {
            let mode = try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as! Int
            #expect(mode == 0o600, "\(secret)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: home)[.posixPermissions] as! Int == 0o700)
        // A second init refuses and keeps the original keys.
        #expect(throws: ModelError(.keyFile, "")) { try LocalDevice.generate(name: "x", createdAt: 1).save(home: home) }
        #expect(try LocalDevice.load(home: home).certificate == d.certificate)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o700, 0o660])
    func looserPermissionsAreRefused(mode: Int) throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/k"
        try KeyFile.write(SecureBytes(randomCount: 32), kind: .deviceSeed, to: path)
        #expect(throws: Never.self) { try KeyFile.read(path, kind: .deviceSeed) }
        chmod(path, mode_t(mode))
        do {
            _ = try KeyFile.read(path, kind: .deviceSeed)
            if mode & 0o077 != 0 { Issue.record("mode \(String(mode, radix: 8)) accepted") }
        } catch let e as ModelError {
            #expect(mode & 0o077 != 0, "mode \(String(mode, radix: 8)) refused: \(e)")
            #expect(e.description.contains("chmod 600"))
        }
    }

    @Test func malformedKeyFilesAreRefused() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let secret = SecureBytes(randomCount: 32)
        try KeyFile.write(secret, kind: .noiseKey, to: dir + "/noise")
        #expect(throws: ModelError(.keyFile, "")) { try KeyFile.read(dir + "/noise", kind: .deviceSeed) }
        #expect(try KeyFile.read(dir + "/noise", kind: .noiseKey) == secret)
        for (i, text) in [
            "", "peerlog-secret v1 x25519-noise-key\n", "peerlog-secret v1 x25519-noise-key\nzz\n",
            "peerlog-secret v1 x25519-noise-key\n" + String(repeating: "ab", count: 31) + "\n",
        ].enumerated() {
            let path = dir + "/bad\(i)"
            _ = FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
            #expect(throws: ModelError(.keyFile, "")) { try KeyFile.read(path, kind: .noiseKey) }
        }
        #expect(throws: ModelError(.keyFile, "")) { try KeyFile.read(dir + "/missing", kind: .noiseKey) }
    }

    @Test func certificateThatDoesNotMatchTheKeysIsRefused() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try LocalDevice.generate(name: "a", createdAt: 1).save(home: dir + "/a")
        try LocalDevice.generate(name: "b", createdAt: 1).save(home: dir + "/b")
        let cert = LocalDevice.paths(home: dir + "/a").certificate
        try FileManager.default.removeItem(atPath: cert)
        try FileManager.default.copyItem(atPath: LocalDevice.paths(home: dir + "/b").certificate, toPath: cert)
        #expect(throws: ModelError(.certificateMismatch, "")) { try LocalDevice.load(home: dir + "/a") }
        #expect(throws: ModelError(.keyFile, "")) { try LocalDevice.load(home: dir + "/none") }
    }
}

import Foundation
import Peerlog
import PeerlogTestSupport
import Testing

/// `Peerlog.exportIdentity` and `Peerlog.initialize(home:restoring:passphrase:)`: the identity
/// travels, the device does not, and a refusal writes nothing.
@Suite struct FacadeBackupTests {
    static func failure(_ body: () throws -> Void) -> PeerlogError? {
        do { try body() } catch let error as PeerlogError { return error } catch {
            Issue.record("not a PeerlogError: \(error)")
        }
        return nil
    }

    @Test func exportAndRestoreMakeANewDeviceOfTheSameIdentity() async throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = try Peerlog.initialize(home: dir + "/a", deviceName: "desk")
        let file = dir + "/me.backup"
        try Peerlog.exportIdentity(home: dir + "/a", to: file, passphrase: "tea at five")
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        #expect(try Peerlog.identityInBackup(at: file) == original.identity)

        let restored = try Peerlog.initialize(
            home: dir + "/b", restoring: file, passphrase: "tea at five", deviceName: "travel")
        #expect(restored.identity == original.identity && restored.device != original.device)
        #expect(restored.name == "travel" && restored.noiseKey != original.noiseKey)
        #expect(try Peerlog.deviceInfo(home: dir + "/b") == restored)
        // The restored home works: it opens and its identity can own a group.
        let peerlog = try await Peerlog.open(home: dir + "/b", create: false)
        #expect(peerlog.identity == original.identity)
        _ = try await peerlog.createGroup(named: "after restore")

        // Export never overwrites.
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        let exists = Self.failure { try Peerlog.exportIdentity(home: dir + "/b", to: file, passphrase: "other") }
        #expect(exists?.code == .file && exists?.description.contains("already exists") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        // A home with keys is not restored into.
        let initialised = Self.failure {
            try Peerlog.initialize(home: dir + "/a", restoring: file, passphrase: "tea at five")
        }
        #expect(initialised?.code == .home && initialised?.description.contains("already initialised") == true)
        #expect(try Peerlog.deviceInfo(home: dir + "/a") == original)
    }

    @Test func refusalsCreateNothing() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Peerlog.initialize(home: dir + "/a")
        let file = dir + "/me.backup"
        let target = dir + "/new/home"

        let empty = Self.failure { try Peerlog.exportIdentity(home: dir + "/a", to: file, passphrase: "") }
        #expect(empty?.code == .invalidValue && !FileManager.default.fileExists(atPath: file))
        let noHome = Self.failure { try Peerlog.exportIdentity(home: dir + "/none", to: file, passphrase: "p") }
        #expect(noHome?.code == .home && !FileManager.default.fileExists(atPath: file))
        try Peerlog.exportIdentity(home: dir + "/a", to: file, passphrase: "right")

        let wrong = Self.failure { try Peerlog.initialize(home: target, restoring: file, passphrase: "wrong") }
        #expect(wrong?.code == .wrongPassphrase, "\(String(describing: wrong))")
        #expect(wrong?.description.hasPrefix("wrong passphrase or damaged file: ") == true)
        #expect(wrong.map { !$0.description.contains("\n") } == true)
        let tooLong = Self.failure {
            try Peerlog.initialize(home: target, restoring: file, passphrase: String(repeating: "p", count: 1025))
        }
        #expect(tooLong?.code == .invalidValue)
        let missing = Self.failure { try Peerlog.initialize(home: target, restoring: dir + "/nofile", passphrase: "p") }
        #expect(missing?.code == .file && missing?.description.contains("nofile") == true)
        var damaged = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        damaged.removeLast()
        #expect(FileManager.default.createFile(atPath: dir + "/short", contents: Data(damaged)))
        let truncated = Self.failure {
            try Peerlog.initialize(home: target, restoring: dir + "/short", passphrase: "right")
        }
        #expect(truncated?.code == .file && truncated?.description.contains("malformed") == true)
        #expect(!FileManager.default.fileExists(atPath: dir + "/new"), "nothing was created")
    }
}

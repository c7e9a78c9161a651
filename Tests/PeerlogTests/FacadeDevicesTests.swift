import Foundation
import Peerlog
import PeerlogModel
import Testing

/// The facade's device list and revocation (issue 16, item 5).
struct FacadeDevicesTests {
    func code(_ body: () async throws -> Void) async -> PeerlogError.Code? {
        do { try await body() } catch let error as PeerlogError { return error.code } catch { return nil }
        return nil
    }

    @Test func listRecordAndRevoke() async throws {
        let log = try await Peerlog.temporary(deviceName: "desk")
        let me = try await log.devices()
        #expect(me.map(\.device) == [log.deviceID.string] && me[0].current && !me[0].revoked && me[0].name == "desk")

        let local = try LocalDevice.load(home: log.home)
        let laptop = try local.additionalDevice(name: "laptop", createdAt: me[0].created + 5)
        try await log.recordLinkedDevice(laptop.certificate.encoded)
        try await log.recordLinkedDevice(laptop.certificate.encoded)
        #expect(await code { try await log.recordLinkedDevice([1, 2, 3]) } == .invalidValue)
        let stranger = try LocalDevice.generate(name: "x", createdAt: 1)
        #expect(await code { try await log.recordLinkedDevice(stranger.certificate.encoded) } == .invalidValue)
        let listed = try await log.devices()
        #expect(
            listed.map(\.name) == ["desk", "laptop"] && listed[1].created == me[0].created + 5 && !listed[1].current)

        #expect(await code { _ = try await log.revokeDevice(log.deviceID) } == .refused)
        let group = try await log.createGroup(named: "notes")
        let revocation = try await log.revokeDevice(laptop.device)
        #expect(revocation.groups == [group] && revocation.device == laptop.device)
        #expect(revocation.reason.hasPrefix("device \(laptop.device) was revoked by identity \(log.identity) at "))
        let again = try await log.revokeDevice(laptop.device)
        #expect(again.encoded == revocation.encoded && again.groups.isEmpty, "revoking again changes nothing")
        let after = try await log.devices()
        #expect(after[1].revoked && after[1].revokedAt == revocation.createdAt && !after[0].revoked)
        #expect(try await log.revokedReason() == nil)

        // Without the identity key in the home, nothing is signed.
        try FileManager.default.removeItem(atPath: log.home + "/identity.key")
        let other = try local.additionalDevice(name: "other", createdAt: 6)
        #expect(await code { _ = try await log.revokeDevice(other.device) } == .refused)
    }
}

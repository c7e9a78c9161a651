import Foundation
import PeerlogChannel
import PeerlogModel
import PeerlogTestSupport
import Testing

/// tools/interop/peerlog_channel.py builds certificates independently; Swift must accept them.
@Suite struct PythonChannelTests {
    struct Emitted: Decodable {
        let certificate: String
        let identity: String
        let device: String
    }

    private func emit(_ arguments: [String]) throws -> Emitted {
        let out = try TestSupport.python("peerlog_channel.py", ["--emit-certificate"] + arguments)
        return try JSONDecoder().decode(Emitted.self, from: Data(out.utf8))
    }

    @Test func freshPythonCertificateDecodesAndVerifies() throws {
        let emitted = try emit(["--name", "python-peer"])
        let certificate = try DeviceCertificate(encoded: TestSupport.bytes(hex: emitted.certificate))
        #expect(certificate.verify() == .valid)
        #expect(certificate.identity.string == emitted.identity)
        #expect(certificate.device.string == emitted.device)
        #expect(certificate.name == "python-peer")
    }

    @Test func seededPythonDeviceMatchesLocalDeviceDeterministic() throws {
        let emitted = try emit(["--seed", "01", "--name", "alice", "--created", "1700000000000"])
        #expect(emitted.certificate == TestSupport.hex(Devices.alice.certificate.encoded))
        #expect(emitted.identity == Devices.alice.identity.string)
    }
}

import Foundation
import Peerlog
import PeerlogTestSupport
import Testing

/// The facade calls `peerlog init`, `id`, `status` and `peers` stand on.
@Suite struct FacadeHomeTests {
    @Test func initializeWritesKeysThatDeviceInfoReadsBack() throws {
        let home = try TestSupport.temporaryDirectory() + "/home"
        defer { try? FileManager.default.removeItem(atPath: home) }
        let created = try Peerlog.initialize(home: home, deviceName: "laptop")
        #expect(created.name == "laptop" && created.certificatePath == home + "/device.cert")
        #expect(created.noiseKey.count == 32 && !created.certificate.isEmpty)
        #expect(try Peerlog.deviceInfo(home: home) == created)
        // Only keys: the store is created by the first open.
        #expect(!FileManager.default.fileExists(atPath: home + "/replica.sqlite"))

        let again = #expect(throws: PeerlogError.self) { try Peerlog.initialize(home: home) }
        #expect(again?.description.contains("already initialised") == true)
        let tooLong = #expect(throws: PeerlogError.self) {
            try Peerlog.initialize(home: home + "2", deviceName: String(repeating: "n", count: 1000))
        }
        #expect(tooLong?.description.contains("device name must be") == true)
    }

    @Test func deviceInfoOfAnEmptyHomeSaysToInit() throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let missing = #expect(throws: PeerlogError.self) { try Peerlog.deviceInfo(home: home) }
        #expect(missing?.description.contains("not initialised (run: peerlog init --home \(home))") == true)
    }

    @Test func daemonWithoutAProcessSaysNoneAnswers() async throws {
        let peerlog = try await Peerlog.temporary()
        let daemon = PeerlogDaemon(home: peerlog.home)
        #expect(daemon.controlSocket == peerlog.home + "/peerlog.sock")
        #expect(PeerlogDaemon(home: peerlog.home, controlSocket: "/tmp/x.sock").controlSocket == "/tmp/x.sock")
        let none = #expect(throws: PeerlogError.self) { try daemon.status() }
        #expect(none?.description.contains("no daemon answers at \(daemon.controlSocket)") == true)
    }

    @Test func daemonAnswersStatusAndCaptureOfARunningNode() async throws {
        let peerlog = try await Peerlog.temporary()
        var options = NetworkOptions()
        options.listen = nil
        options.discovery = false
        let service = try peerlog.service(options)
        let running = Task { try await service.run() }
        defer { running.cancel() }
        let daemon = PeerlogDaemon(home: peerlog.home)
        var status: NodeStatus?
        for _ in 0..<200 where status == nil {
            status = try? daemon.status()
            if status == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(status?.device == peerlog.deviceID.string)
        #expect(try daemon.statusDocument().contains("\"device\" : \"\(peerlog.deviceID)\""))
        let file = peerlog.home + "/c.pcapng"
        let started = try daemon.startCapture(path: file, maxBytes: nil, omitBodies: true)
        #expect(started.path == file && started.omitBodies)
        #expect(try daemon.stopCapture().files == [file])
        let idle = #expect(throws: PeerlogError.self) { try daemon.stopCapture() }
        #expect(idle?.description == "control socket: no capture is running")
    }
}

import Foundation
import PeerlogCapture
import PeerlogEngine
import PeerlogModel

extension OfflineReplay {
    /// Replays into the home `dir`: created if needed, given a new identity named "replay" if
    /// it has none, and refused if its replica holds any group (a replay needs a fresh one).
    package static func run(capture: CaptureFile, connection: UInt64?, intoHome dir: String) throws -> Result {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let device: LocalDevice
        if FileManager.default.fileExists(atPath: LocalDevice.paths(home: dir).certificate) {
            device = try LocalDevice.load(home: dir)
        } else {
            device = try LocalDevice.generate(name: "replay", createdAt: WallClock.nowMillis())
            try device.save(home: dir)
        }
        let clock = ReplayClock()
        let replica = try Replica(path: dir + "/replica.sqlite", device: device, clock: { clock.now() })
        guard try replica.groupIDs().isEmpty else {
            throw CaptureError(offset: nil, "\(dir) already holds groups: replay into a fresh home")
        }
        return try run(capture: capture, connection: connection, into: replica, device: device, clock: clock)
    }
}

import ArgumentParser
import Peerlog
import PeerlogModel

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create an identity and this device's keys and certificate.")

    @OptionGroup var home: HomeOptions
    @Option(help: "Device name shown to others (default: the host name).")
    var name: String?
    @Option(
        help: ArgumentHelp(
            "Restore the identity from a backup (`peerlog identity export`) as a new device of it.", valueName: "file"))
    var restore: String?

    func validate() throws {
        if let name, name.isEmpty || name.utf8.count > DeviceCertificate.maxNameBytes {
            throw ValidationError("--name must be 1...\(DeviceCertificate.maxNameBytes) bytes")
        }
    }

    func run() throws {
        let device =
            try restore.map { try restoreIdentity(home: home.path, from: $0, name: name) }
            ?? Peerlog.initialize(home: home.path, deviceName: name)
        print("Initialised \(home.path)" + (restore.map { " from the backup \($0)" } ?? ""))
        print("identity: \(device.identity)")
        print("device:   \(device.device) (\(device.name))")
    }
}

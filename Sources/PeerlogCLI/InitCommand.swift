import ArgumentParser
import Peerlog
import PeerlogModel

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create an identity and this device's keys and certificate.")

    @OptionGroup var home: HomeOptions
    @Option(help: "Device name shown to others (default: the host name).")
    var name: String?

    func validate() throws {
        if let name, name.isEmpty || name.utf8.count > DeviceCertificate.maxNameBytes {
            throw ValidationError("--name must be 1...\(DeviceCertificate.maxNameBytes) bytes")
        }
    }

    func run() throws {
        let device = try Peerlog.initialize(home: home.path, deviceName: name)
        print("Initialised \(home.path)")
        print("identity: \(device.identity)")
        print("device:   \(device.device) (\(device.name))")
    }
}

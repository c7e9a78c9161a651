import ArgumentParser
import Peerlog
import PeerlogModel

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create an identity and this device's keys and certificate.",
        discussion: """
            With --join CODE, this device joins an existing identity instead: run `peerlog device
            link` on a device of that identity (its daemon running) and type the code it prints.
            """)

    @OptionGroup var home: HomeOptions
    @Option(help: "Device name shown to others (default: the host name).")
    var name: String?
    @Option(help: ArgumentHelp("Join the identity of the device that printed this code.", valueName: "code"))
    var join: String?
    @Option(
        help: ArgumentHelp(
            "With --join: the link session's address, where DNS-SD does not reach.", valueName: "host:port"))
    var peer: String?
    @Option(help: ArgumentHelp("With --join: the network id of the identity's daemons.", valueName: "id"))
    var network: String?
    @Option(
        help: ArgumentHelp(
            "Restore the identity from a backup (`peerlog identity export`) as a new device of it.", valueName: "file"))
    var restore: String?

    func validate() throws {
        if let name, name.isEmpty || name.utf8.count > DeviceCertificate.maxNameBytes {
            throw ValidationError("--name must be 1...\(DeviceCertificate.maxNameBytes) bytes")
        }
        if join == nil && (peer != nil || network != nil) { throw ValidationError("--peer and --network need --join") }
        if join != nil && restore != nil { throw ValidationError("--join and --restore cannot be combined") }
    }

    func run() async throws {
        if let join {
            let address = try peer.map { try PeerAddress(parsing: $0) }
            let linked: PeerlogLinkedDevice
            do {
                linked = try await Peerlog.join(
                    home: home.path, code: join, peer: address, deviceName: name, networkID: network ?? "")
            } catch { throw CLIError("\(error)") }
            print("Joined identity \(linked.device.identity) in \(home.path)")
            print("device:       \(linked.device.device) (\(linked.device.name))")
            print("confirmation: \(linked.confirmation) (the linking device logs the same)")
            print("Start `peerlog daemon`: it dials \(linked.peers.joined(separator: ", ")) and receives every group.")
            return
        }
        let device =
            try restore.map { try restoreIdentity(home: home.path, from: $0, name: name) }
            ?? Peerlog.initialize(home: home.path, deviceName: name)
        print("Initialised \(home.path)" + (restore.map { " from the backup \($0)" } ?? ""))
        print("identity: \(device.identity)")
        print("device:   \(device.device) (\(device.name))")
    }
}

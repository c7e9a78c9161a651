import ArgumentParser
import Peerlog
import PeerlogEncoding
import PeerlogModel

struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Back up this identity's key (restore it with `peerlog init --restore FILE`).",
        subcommands: [Export.self]
    )

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write the identity key, sealed with a passphrase, to a new file.",
            discussion: """
                The passphrase comes from $\(Passphrase.environmentVariable) when it is set; otherwise, on a \
                terminal, it is asked for twice without echo. It must be 1...\(IdentityBackup.maxPassphraseBytes) \
                bytes. The file (mode 600, never overwritten) holds the identity key only, sealed with \
                XChaCha20-Poly1305 under an Argon2id key (3 passes over 128 MiB): anyone with the file and the \
                passphrase can add devices to the identity. `peerlog init --restore FILE` makes a new device of \
                the identity from it.
                """
        )
        @OptionGroup var home: HomeOptions
        @Option(help: ArgumentHelp("The backup file to create.", valueName: "file")) var out: String
        @OptionGroup var output: OutputOptions

        func run() throws {
            // Checked before asking for the passphrase, so nothing is typed in vain.
            if FileIO.exists(out) { throw CLIError("\(out) already exists; refusing to overwrite it") }
            try home.requireIdentity(initCommand: "peerlog init")
            let device = try Peerlog.deviceInfo(home: home.path)
            let passphrase = try Passphrase.read(
                prompt: "Passphrase for the backup of identity \(device.identity): ", confirm: true)
            try Peerlog.exportIdentity(home: home.path, to: out, passphrase: passphrase)
            if output.json {
                print(
                    JSON.object([("identity", .string(device.identity.string)), ("file", .string(out))])
                        .serialized(pretty: true))
            } else {
                print("Wrote the backup of identity \(device.identity) to \(out)")
                print("Restore it on a new device with: peerlog init --restore \(out)")
            }
        }
    }
}

/// `peerlog init --restore FILE`: a new device of the identity in the backup. The home and the
/// file are checked before the passphrase is asked for; the facade checks them again and opens
/// the file before it writes anything.
func restoreIdentity(home: String, from file: String, name: String?) throws -> PeerlogDevice {
    if FileIO.exists(LocalDevice.paths(home: home).certificate) || FileIO.exists(LocalDevice.paths(home: home).identity)
    {
        throw CLIError("\(home) is already initialised; restore into a new home")
    }
    let identity = try Peerlog.identityInBackup(at: file)
    let passphrase = try Passphrase.read(prompt: "Passphrase of the backup of identity \(identity): ", confirm: false)
    return try Peerlog.initialize(home: home, restoring: file, passphrase: passphrase, deviceName: name)
}

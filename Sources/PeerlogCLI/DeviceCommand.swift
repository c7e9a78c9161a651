import ArgumentParser
import Peerlog
import PeerlogEncoding

/// `peerlog device …`: the devices of this identity.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "List, link and revoke the devices of this identity.",
        subcommands: [List.self, Revoke.self, DeviceLink.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the devices of this identity this replica knows of, and whether each is revoked.")

        @OptionGroup var home: HomeOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let devices = try await home.openForReading().devices()
            if output.json {
                print(
                    JSON.array(
                        devices.map {
                            .object([
                                ("name", .string($0.name)), ("device", .string($0.device)),
                                ("created", .int($0.created)),
                                ("revoked", .bool($0.revoked)), ("revokedAt", $0.revokedAt.map { .int($0) } ?? .null),
                                ("current", .bool($0.current)),
                            ])
                        }
                    ).serialized(pretty: true))
                return
            }
            printTable(
                [["NAME", "DEVICE", "LINKED", "STATUS"]]
                    + devices.map {
                        [
                            $0.name + ($0.current ? " (this device)" : ""), $0.device, formatMillis($0.created),
                            $0.revokedAt.map { "revoked \(formatMillis($0))" } ?? "active",
                        ]
                    })
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke another device of this identity (a lost or stolen laptop).",
            discussion: """
                Signs a revocation with the identity key (identity.key in the home) and stores it. A running daemon \
                on this home sends it to every peer at once; otherwise it goes out when the daemon next runs. Peers \
                then refuse the device at the handshake and reject its later receipts. The device keeps what it \
                already received. Revoking the device you are on is refused.
                """)

        @OptionGroup var home: HomeOptions
        @OptionGroup var output: OutputOptions
        @Argument(
            help: ArgumentHelp("The device id to revoke (`peerlog device list` shows them).", valueName: "device"))
        var device: String
        @Flag(help: "Revoke a device this replica has never seen (otherwise refused, as a likely typo).")
        var force = false

        func run() async throws {
            let id: DeviceID
            do { id = try DeviceID(string: device) } catch {
                throw CLIError(
                    "\"\(device)\" is not a device id (expected the b… text `peerlog device list` prints): \(error)",
                    code: .invalidArguments)
            }
            let peerlog = try await home.open()
            if !force, try await !peerlog.devices().contains(where: { $0.device == id.string }) {
                throw CLIError(
                    "device \(id) is not a known device of this identity"
                        + " (`peerlog device list` shows them; --force revokes it anyway)",
                    code: .invalidArguments)
            }
            let revocation = try await peerlog.revokeDevice(id)
            if output.json {
                print(
                    JSON.object([
                        ("device", .string(revocation.device.string)),
                        ("identity", .string(revocation.identity.string)),
                        ("revokedAt", .int(revocation.createdAt)), ("reason", .string(revocation.reason)),
                        ("groups", .array(revocation.groups.map { .string($0.string) })),
                    ]).serialized(pretty: true))
            } else {
                print(revocation.reason)
                if !revocation.groups.isEmpty {
                    print(
                        "recorded in \(revocation.groups.count) group(s): "
                            + revocation.groups.map(\.string).joined(separator: ", "))
                }
            }
        }
    }
}

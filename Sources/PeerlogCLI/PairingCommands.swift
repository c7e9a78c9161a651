import ArgumentParser
import Foundation
import Peerlog
import PeerlogEncoding

/// `--expires SECONDS` of a pairing code.
struct PairingExpiry: ParsableArguments {
    @Option(help: ArgumentHelp("Seconds the code stays valid (1...86400).", valueName: "seconds"))
    var expires = Int(Peerlog.defaultPairingLifetime.components.seconds)

    func validate() throws {
        guard (1...86_400).contains(expires) else { throw ValidationError("--expires must be 1...86400 seconds") }
    }

    var duration: Duration { .seconds(expires) }
}

/// Prints a pairing ticket: the code, how long it lives, and what the other side runs.
func printTicket(_ ticket: PairingTicket, json: Bool, joinCommand: String) {
    if json {
        var fields: [(String, JSON)] = [
            ("code", .string(ticket.code)), ("nameplate", .number(String(ticket.nameplate))),
            ("purpose", .string(ticket.purpose)), ("expiresAt", .number(String(ticket.expiresAt))),
            ("address", .string(ticket.address)),
        ]
        if let group = ticket.group { fields.append(("group", .string(group))) }
        if let role = ticket.role { fields.append(("role", .string(role))) }
        print(JSON.object(fields).serialized(pretty: true))
        return
    }
    let minutes = max(1, Int((Double(ticket.expiresAt) / 1000 - Date().timeIntervalSince1970) / 60 + 0.5))
    print("Code: \(ticket.code)")
    print("Valid for about \(minutes) minute(s), for one device, 3 tries.")
    print("On the other device run:  \(joinCommand) \(ticket.code)")
    print("(where DNS-SD does not reach: add --peer \(ticket.address))")
}

extension DeviceLink {
    static let joinCommand = "peerlog init --join"
}

/// `peerlog device link`: a code that makes a new laptop a device of this identity.
struct DeviceLink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "link",
        abstract: "Print a short code that links a new device to this identity (the daemon must run).",
        discussion: """
            On the new device run `peerlog init --join CODE`. The new device gets its own keys, a
            certificate signed by this identity, and (by default) the identity key, so it can link
            and revoke devices too. It then receives every group of the identity.
            """)

    @OptionGroup var home: HomeOptions
    @OptionGroup var expiry: PairingExpiry
    @Flag(
        help: """
            Give the new device only its certificate, not the identity key: it syncs and writes as \
            this identity but cannot link, revoke or export.
            """)
    var certificateOnly = false
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let peerlog = try await home.open()
        do {
            printTicket(
                try await peerlog.linkDevice(expiresIn: expiry.duration, sharesIdentityKey: !certificateOnly),
                json: output.json,
                joinCommand: Self.joinCommand)
        } catch { throw CLIError("\(error)") }
    }
}

/// `peerlog invite create|join`: pair two people by a short code.
struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Invite a person to a group by a short code, or join one with a code.",
        subcommands: [Create.self, Join.self])

    /// `peerlog invite create GROUP [--role R]`.
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Print a short code that adds whoever enters it to GROUP (the daemon must run).")

        @OptionGroup var home: HomeOptions
        @OptionGroup var group: GroupArgument
        @Option(help: "member, admin or owner.") var role = "member"
        @OptionGroup var expiry: PairingExpiry
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let role = try parseRole(role)
            let (peerlog, id) = try await home.open(group)
            do {
                printTicket(
                    try await peerlog.createInviteCode(to: id, as: role, expiresIn: expiry.duration),
                    json: output.json, joinCommand: "peerlog invite join")
            } catch { throw CLIError("\(error)") }
        }
    }

    /// `peerlog invite join CODE [--peer HOST:PORT]`.
    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "join",
            abstract: "Join a group with the code its inviter read out.",
            discussion: """
                Finds the inviter's session on the LAN (or at --peer), proves the code without
                sending it, and records the inviter: this home's daemon admits and dials it and
                accepts the invitation when it arrives. With a daemon running, waits up to --wait
                seconds for that and prints the result.
                """)

        @OptionGroup var home: HomeOptions
        @Argument(help: "The code, e.g. 47-2930-8174.") var code: String
        @Option(help: ArgumentHelp("The session's address, as `invite create` printed it.", valueName: "host:port"))
        var peer: String?
        @Option(help: ArgumentHelp("Seconds to wait for the group to arrive (0: do not wait).", valueName: "seconds"))
        var wait = 30
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let address = try peer.map { try PeerAddress(parsing: $0) }
            let peerlog = try await home.open()
            let joined: PeerlogInviteCodeJoin
            do { joined = try await peerlog.joinWithCode(code: code, peer: address) } catch {
                throw CLIError("\(error)")
            }
            if !output.json {
                print("Paired with \(joined.inviter) (\(joined.inviterDevice)); confirmation \(joined.confirmation)")
                print("Invited to \"\(joined.groupName)\" (\(joined.group)) as \(joined.role)")
            }
            var active = false
            if joined.nodeNotified && wait > 0 {
                if !output.json { printError("waiting up to \(wait) s for the group to arrive …") }
                let end = ContinuousClock.now + .seconds(wait)
                while ContinuousClock.now < end {
                    if let g = try? await peerlog.group(joined.group, view: .tentative), g.role != nil {
                        active = true
                        break
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            if output.json {
                print(
                    JSON.object([
                        ("group", .string(joined.group.string)), ("name", .string(joined.groupName)),
                        ("role", .string(joined.role)), ("inviter", .string(joined.inviter.string)),
                        ("confirmation", .string(joined.confirmation)), ("safetyNumber", .string(joined.safetyNumber)),
                        ("joined", .bool(active)), ("daemonNotified", .bool(joined.nodeNotified)),
                    ]).serialized(pretty: true))
                return
            }
            if active {
                print("Joined \"\(joined.groupName)\"")
            } else if joined.nodeNotified {
                print("The group has not arrived yet; the daemon accepts it when it does (see `peerlog status`)")
            } else {
                print("No daemon runs for this home: start `peerlog daemon`; it dials the inviter and accepts then")
            }
            print("Safety number (compare with \(joined.inviterDevice)): \(joined.safetyNumber)")
        }
    }
}

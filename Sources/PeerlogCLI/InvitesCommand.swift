import ArgumentParser
import Peerlog
import PeerlogEncoding

/// `peerlog invites`: groups this identity has been invited to and not yet answered.
struct Invites: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invites",
        abstract: "List pending invitations (accept with `peerlog group accept GROUP`, decline with `group leave`).",
        discussion: "Invitations arrive by sync from any member of the group, or in an export file."
    )

    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let peerlog = try await home.openForReading()
        let rows = try await peerlog.invitations().map { ($0.id, $0.name, $0.invitedRole?.rawValue ?? "") }
        if output.json {
            print(
                JSON.array(
                    rows.map {
                        .object([("group", .string($0.0.string)), ("name", .string($0.1)), ("role", .string($0.2))])
                    }
                ).serialized(pretty: true))
            return
        }
        if rows.isEmpty { print("no pending invitations") }
        for (id, name, role) in rows { print("\(name)  \(id)  as \(role)  (peerlog group accept \(id))") }
    }
}

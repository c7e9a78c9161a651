import ArgumentParser
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// `peerlog invites`: groups this identity has been invited to and not yet answered.
struct Invites: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List pending invitations (accept with `peerlog group accept GROUP`, decline with `group leave`).",
        discussion: "Invitations arrive by sync from any member of the group, or in an export file."
    )

    @OptionGroup var home: HomeOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let node = try Node(home)
        var rows: [(GroupID, String, String)] = []
        for group in try node.replica.groupIDs() {
            guard let state = try node.replica.state(of: group, view: .tentative),
                  let me = state.member(node.device.identity), me.status == .pending else { continue }
            rows.append((group, state.name, me.role.rawValue))
        }
        if json {
            print(JSON.array(rows.map { .object([("group", .string($0.0.string)), ("name", .string($0.1)), ("role", .string($0.2))]) }).serialized(pretty: true))
            return
        }
        if rows.isEmpty { print("no pending invitations") }
        for (id, name, role) in rows { print("\(name)  \(id)  as \(role)  (peerlog group accept \(id))") }
    }
}

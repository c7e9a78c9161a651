import ArgumentParser
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogNode

struct GroupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Create groups, manage their members, and show them.",
        discussion: "GROUP is a group id (b…) or the name of a group this replica knows, if no other group has it.",
        subcommands: [Create.self, Add.self, Accept.self, Remove.self, Leave.self, Rename.self, Delete.self, RoleCommand.self, Sequencer.self, List.self, Show.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a group; this device becomes its owner and sequencer.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group's name.") var name: String
        @Option(help: "Most members, pending invitations included.") var maxMembers = GroupLimits.defaultMaxMembers
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let node = try Node(home)
            let group = try node.replica.createGroup(name: name, maxMembers: maxMembers)
            if json {
                print(JSON.object([("id", .string(group.string)), ("name", .string(name)), ("max_members", .int(maxMembers))]).serialized(pretty: true))
            } else {
                print("Created group \"\(name)\" (up to \(maxMembers) members): \(group)")
            }
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Invite an identity; it becomes a member when it accepts.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Argument(help: "The identity to invite, as printed by `peerlog id`.") var identity: String
        @Option(help: "member, admin or owner.") var role = "member"
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let who = try parseIdentity(identity), role = try parseRole(role)
            try groupWrite(home, group, .memberAdded(identity: who, role: role), json: json) { "Invited \(who) to \"\($0)\" as \(role.rawValue)" }
        }
    }

    struct Accept: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Accept this identity's pending invitation to a group.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try groupWrite(home, group, .inviteAccepted, json: json) { "Accepted the invitation to \"\($0)\"" }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a member or withdraw an invitation.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Argument(help: "The identity to remove.") var identity: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let who = try parseIdentity(identity)
            try groupWrite(home, group, .memberRemoved(identity: who), json: json) { "Removed \(who) from \"\($0)\"" }
        }
    }

    struct Leave: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Leave a group, or decline a pending invitation.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try groupWrite(home, group, .memberLeft, json: json) { "Left \"\($0)\"" }
        }
    }

    struct Rename: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a group (owners and admins).")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Argument(help: "The new name.") var name: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try groupWrite(home, group, .renamed(name: name), json: json) { "Renamed \"\($0)\" to \"\(name)\"" }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a group for every member (owners only; no confirmation, cannot be undone).")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            try groupWrite(home, group, .deleted, json: json) {
                "Deleted group \"\($0)\": once committed, its entities are gone and it accepts no more receipts"
            }
        }
    }

    struct RoleCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "role", abstract: "Change an active member's role (owners only).")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Argument(help: "The member's identity.") var identity: String
        @Argument(help: "member, admin or owner.") var role: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let who = try parseIdentity(identity), role = try parseRole(role)
            try groupWrite(home, group, .roleChanged(identity: who, role: role), json: json) { "\(who) is now \(role.rawValue) of \"\($0)\"" }
        }
    }
}

extension GroupCommand {
    static func write(_ home: HomeOptions, _ groupText: String, _ op: GroupOperation, json: Bool, summary: (String) -> String) throws {
        try groupWrite(home, groupText, op, json: json, summary: summary)
    }
}

/// Appends a group operation and reports it; `summary` gets the group's name before the write.
private func groupWrite(_ home: HomeOptions, _ groupText: String, _ op: GroupOperation, json: Bool, summary: (String) -> String) throws {
    let node = try Node(home)
    let group = try node.group(groupText)
    let name = try node.replica.state(of: group, view: .tentative)?.name ?? group.string
    let result = try node.replica.append(op, to: group)
    printAppend(result, group: group, summary: summary(name), json: json)
}

extension GroupCommand {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the groups this replica knows.")
        @OptionGroup var home: HomeOptions
        @OptionGroup var view: ViewOptions
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let node = try Node(home)
            var rows = [[String]](), objects = [JSON]()
            for id in try node.replica.groupIDs() {
                let state = try node.replica.state(of: id, view: view.view)
                let active = state?.members.values.count { $0.status == .active } ?? 0
                let seq = try node.replica.vector(of: id).committed, tentative = try node.replica.tentativeCount(of: id)
                let status = state?.status.rawValue ?? "unknown"
                rows.append([id.string, state?.name ?? "?", status, String(active), String(seq), String(tentative)])
                objects.append(.object([
                    ("id", .string(id.string)), ("name", state.map { .string($0.name) } ?? .null), ("status", .string(status)),
                    ("members", .int(active)), ("committed_seq", .int(seq)), ("tentative", .int(tentative)),
                ]))
            }
            if json {
                print(JSON.array(objects).serialized(pretty: true))
            } else if rows.isEmpty {
                print("No groups yet (create one with `peerlog group create NAME`, or import an export).")
            } else {
                printTable([["GROUP", "NAME", "STATUS", "MEMBERS", "SEQ", "TENTATIVE"]] + rows)
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a group: its settings, sequencer and members.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @OptionGroup var view: ViewOptions
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let node = try Node(home)
            let id = try node.group(group)
            let state = try node.state(of: id, view: view.view)
            let members = try node.replica.members(of: id, view: view.view)
            let seq = try node.replica.vector(of: id).committed, tentative = try node.replica.tentativeCount(of: id)
            // The election's view (leader, term) lives in the running daemon, if one runs.
            let live = (try? ControlClient.status(socketPath: home.path + "/peerlog.sock"))?.groups.first { $0.id == id.string }?.sequencer
            if json {
                print(JSON.object([
                    ("id", .string(id.string)), ("name", .string(state.name)), ("status", .string(state.status.rawValue)),
                    ("view", .string(view.view.rawValue)), ("max_members", .int(state.maxMembers)), ("created_by", .string(state.createdBy.string)),
                    ("sequencer", state.authority.json), ("committed_seq", .int(seq)), ("tentative", .int(tentative)),
                    ("election", live?.term.map { term in .object([
                        ("role", .string(live?.role ?? "")), ("term", .int(term)), ("leader", live?.leader.map { .string($0) } ?? .null),
                    ]) } ?? .null),
                    ("members", .array(members.map(Self.memberJSON))),
                ]).serialized(pretty: true))
                return
            }
            printRows([
                ("group", id.string), ("name", state.name), ("status", state.status.rawValue), ("view", view.view.rawValue),
                ("max members", String(state.maxMembers)), ("created by", state.createdBy.string), ("sequencer", state.authority.text),
                ("committed seq", String(seq)), ("tentative", String(tentative)), ("members", String(members.count)),
            ] + (live?.term.map { term in [("election", "term \(term), leader \(live?.leader ?? "unknown"), this device \(live?.role ?? "?")")] } ?? []))
            printTable(members.map { m in
                [m.member.identity.string, m.member.role.rawValue, m.member.status.rawValue, Self.standing(m.status)]
                    + (m.member.identity == node.device.identity ? ["(you)"] : [])
            }, indent: "  ")
        }

        /// Whether a member's entry (role and status) is the committed one, and since which seq.
        static func standing(_ status: ItemStatus) -> String {
            switch status {
            case .committed(let seq): "committed since seq \(seq)"
            case .tentative: "tentative"
            }
        }

        /// `standing` is "committed" (with `since_seq`, where the entry last changed) or "tentative".
        static func memberJSON(_ m: MemberView) -> JSON {
            let standing: [(String, JSON)] = switch m.status {
            case .committed(let seq): [("standing", .string("committed")), ("since_seq", .int(seq))]
            case .tentative: [("standing", .string("tentative")), ("since_seq", .null)]
            }
            return .object([("identity", .string(m.member.identity.string)), ("role", .string(m.member.role.rawValue)), ("status", .string(m.member.status.rawValue))] + standing)
        }
    }
}

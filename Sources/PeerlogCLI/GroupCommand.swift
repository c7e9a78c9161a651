import ArgumentParser
import Peerlog
import PeerlogEncoding

struct GroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Create groups, manage their members, and show them.",
        discussion: "GROUP is a group id (b…) or the name of a group this replica knows, if no other group has it.",
        subcommands: [
            Create.self, GroupWrite<Add>.self, GroupWrite<Accept>.self, GroupWrite<Remove>.self, GroupWrite<Leave>.self,
            GroupWrite<Rename>.self, GroupWrite<Rotate>.self,
            GroupWrite<Delete>.self, GroupWrite<RoleCommand>.self, GroupWrite<Sequencer>.self, List.self, Show.self,
            Keys.self, Snapshot.self, Compact.self, Retention.self, Limits.self,
        ]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create a group; this device becomes its owner and sequencer.")
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group's name.") var name: String
        @Option(help: "Most members, pending invitations included.") var maxMembers = Peerlog.defaultMaxMembers
        @Flag(
            help:
                "Keep entity and application bodies readable by anyone holding the log, relays included (the default seals them end to end: only member devices read them)."
        )
        var plaintext = false
        @Flag(help: .hidden) var encrypted = false
        @Flag(help: "Members who join later read what was written before (not with --plaintext).")
        var history = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if plaintext && encrypted { throw ValidationError("--plaintext and --encrypted exclude each other") }
            if history && plaintext {
                throw ValidationError("--history is for encrypted groups (not with --plaintext)")
            }
        }

        func run() async throws {
            let peerlog = try await home.open()
            let encrypted = !plaintext
            let group = try await peerlog.createGroup(
                named: name, maxMembers: maxMembers, encrypted: encrypted, keepsHistory: history)
            if output.json {
                print(
                    JSON.object([
                        ("id", .string(group.string)), ("name", .string(name)), ("max_members", .int(maxMembers)),
                        ("encrypted", .bool(encrypted)),
                    ]).serialized(pretty: true))
            } else {
                let kind = encrypted ? "encrypted group" : "group"
                print("Created \(kind) \"\(name)\" (up to \(maxMembers) members): \(group)")
            }
        }
    }

    /// `group add GROUP IDENTITY [--role ROLE]`.
    struct Add: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Invite an identity; it becomes a member when it accepts.")
        @Argument(help: "The identity to invite, as printed by `peerlog id`.") var identity: String
        @Option(help: "member, admin or owner.") var role = "member"

        func write() throws -> GroupWriteStep {
            let who = try parseIdentity(identity)
            let role = try parseRole(role)
            return GroupWriteStep(
                { try await $0.invite(who, to: $1, as: role) },
                summary: {
                    "Invited \(who) to \"\($0)\" as \(role.rawValue)"
                })
        }
    }

    /// `group accept GROUP`.
    struct Accept: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "accept", abstract: "Accept this identity's pending invitation to a group.")
        func write() -> GroupWriteStep {
            GroupWriteStep(
                { try await $0.acceptInvitation(to: $1) }, summary: { "Accepted the invitation to \"\($0)\"" })
        }
    }

    /// `group remove GROUP IDENTITY`.
    struct Remove: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove a member or withdraw an invitation.")
        @Argument(help: "The identity to remove.") var identity: String

        func write() throws -> GroupWriteStep {
            let who = try parseIdentity(identity)
            return GroupWriteStep({ try await $0.remove(who, from: $1) }, summary: { "Removed \(who) from \"\($0)\"" })
        }
    }

    /// `group leave GROUP`.
    struct Leave: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "leave", abstract: "Leave a group, or decline a pending invitation.")
        func write() -> GroupWriteStep { GroupWriteStep({ try await $0.leave($1) }, summary: { "Left \"\($0)\"" }) }
    }

    /// `group rotate GROUP`.
    struct Rotate: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract:
                "Start a new epoch in an encrypted group: later writes use a fresh key (removals do this themselves).")
        func write() -> GroupWriteStep {
            GroupWriteStep({ try await $0.rotateKey(of: $1) }, summary: { "Started a new epoch in \"\($0)\"" })
        }
    }

    /// `group rename GROUP NAME`.
    struct Rename: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "rename", abstract: "Rename a group (owners and admins).")
        @Argument(help: "The new name.") var name: String

        func write() -> GroupWriteStep {
            GroupWriteStep({ try await $0.rename($1, to: name) }, summary: { "Renamed \"\($0)\" to \"\(name)\"" })
        }
    }

    /// `group delete GROUP`.
    struct Delete: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a group for every member (owners only; no confirmation, cannot be undone).")
        func write() -> GroupWriteStep {
            GroupWriteStep(
                { try await $0.deleteGroup($1) },
                summary: {
                    "Deleted group \"\($0)\": once committed, its entities are gone and it accepts no more receipts"
                })
        }
    }

    /// `group role GROUP IDENTITY ROLE`.
    struct RoleCommand: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "role", abstract: "Change an active member's role (owners only).")
        @Argument(help: "The member's identity.") var identity: String
        @Argument(help: "member, admin or owner.") var role: String

        func write() throws -> GroupWriteStep {
            let who = try parseIdentity(identity)
            let role = try parseRole(role)
            return GroupWriteStep(
                { try await $0.setRole(role, of: who, in: $1) },
                summary: {
                    "\(who) is now \(role.rawValue) of \"\($0)\""
                })
        }
    }
}

extension GroupCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the groups this replica knows.")
        @OptionGroup var home: HomeOptions
        @OptionGroup var view: ViewOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let peerlog = try await home.openForReading()
            var rows = [[String]]()
            var objects = [JSON]()
            for id in try await peerlog.groupIDs() {
                let state = try await peerlog.group(id, view: view.view)
                let active = state?.memberCount ?? 0
                let progress = try await peerlog.progress(of: id)
                let seq = progress.committedSeq
                let tentative = progress.tentativeCount
                let status = state?.status.rawValue ?? "unknown"
                rows.append([id.string, state?.name ?? "?", status, String(active), String(seq), String(tentative)])
                objects.append(
                    .object([
                        ("id", .string(id.string)), ("name", state.map { .string($0.name) } ?? .null),
                        ("status", .string(status)),
                        ("members", .int(active)), ("committed_seq", .int(seq)), ("tentative", .int(tentative)),
                    ]))
            }
            if output.json {
                print(JSON.array(objects).serialized(pretty: true))
            } else if rows.isEmpty {
                print("No groups yet (create one with `peerlog group create NAME`, or import an export).")
            } else {
                printTable([["GROUP", "NAME", "STATUS", "MEMBERS", "SEQ", "TENTATIVE"]] + rows)
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show a group: its settings, sequencer and members.")
        @OptionGroup var home: HomeOptions
        @OptionGroup var group: GroupArgument
        @OptionGroup var view: ViewOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (peerlog, id) = try await home.openForReading(group)
            guard let state = try await peerlog.group(id, view: view.view) else {
                throw CLIError(
                    "group \(id) has no state yet in the \(view.view.rawValue) view (its group.created receipt is not held)"
                )
            }
            let members = try await peerlog.members(of: id, view: view.view)
            let seq = state.committedSeq
            let tentative = state.tentativeCount
            // The election's view (leader, term) lives in the running daemon, if one runs.
            let live = await peerlog.daemonStatus()?.groups.first { $0.id == id.string }?.sequencer
            let keys = try await peerlog.encryption(of: id)
            let snapshots = try await peerlog.snapshots(of: id)
            let floor = try await peerlog.floor(of: id)
            let retention = try await peerlog.retention(of: id).map { Int($0.components.seconds / 86_400) }
            let held: String = floor == 0 ? "whole log held" : "held from seq \(floor) (snapshot below)"
            let kept: String = retention.map { ", retention on (\($0) days)" } ?? ", retention off"
            let snapshotText: String =
                snapshots.isEmpty
                ? "none" : snapshots.map { "seq \($0.seq) (\($0.bytes) bytes)" }.joined(separator: ", ")
            let encryption: JSON =
                keys.encrypted
                ? .object([
                    ("epoch", .int(keys.epoch)), ("history", .bool(keys.history)), ("keys_held", .int(keys.keysHeld)),
                    ("waiting_for_key", .int(keys.waitingForKey)),
                ]) : .null
            if output.json {
                print(
                    JSON.object([
                        ("id", .string(id.string)), ("name", .string(state.name)),
                        ("status", .string(state.status.rawValue)),
                        ("view", .string(view.view.rawValue)), ("max_members", .int(state.maxMembers)),
                        ("created_by", .string(state.createdBy.string)),
                        ("sequencer", state.sequencer.json), ("committed_seq", .int(seq)),
                        ("tentative", .int(tentative)),
                        (
                            "election",
                            live?.term.map { term in
                                .object([
                                    ("role", .string(live?.role?.rawValue ?? "")), ("term", .int(term)),
                                    ("leader", live?.leader.map { .string($0) } ?? .null),
                                ])
                            } ?? .null
                        ),
                        ("encryption", encryption),
                        ("floor", .int(floor)), ("retention_min_age_days", retention.map { .int($0) } ?? .null),
                        ("snapshots", .array(snapshots.map(snapshotJSON))),
                        ("members", .array(members.map(Self.memberJSON))),
                    ]).serialized(pretty: true))
                return
            }
            printRows(
                [
                    ("group", id.string), ("name", state.name), ("status", state.status.rawValue),
                    ("view", view.view.rawValue),
                    ("max members", String(state.maxMembers)), ("created by", state.createdBy.string),
                    ("sequencer", state.sequencer.text),
                    ("committed seq", String(seq)), ("tentative", String(tentative)),
                    (
                        "encryption",
                        keys.encrypted
                            ? "end to end, epoch \(keys.epoch), \(keys.keysHeld) keys held, \(keys.waitingForKey) receipts waiting for a key\(keys.history ? ", history for new members" : "")"
                            : "none (plaintext)"
                    ),
                    ("log", held + kept), ("snapshots", snapshotText),
                    ("members", String(members.count)),
                ]
                    + (live?.term.map { term in
                        [
                            (
                                "election",
                                "term \(term), leader \(live?.leader ?? "unknown"), this device \(live?.role?.rawValue ?? "?")"
                            )
                        ]
                    } ?? []))
            printTable(
                members.map { m in
                    [m.identity.string, m.role.rawValue, m.status.rawValue, Self.standing(m.seq)]
                        + (m.identity == peerlog.identity ? ["(you)"] : [])
                }, indent: "  ")
        }

        /// Whether a member's entry (role and status) is the committed one, and since which seq.
        static func standing(_ seq: UInt64?) -> String { seq.map { "committed since seq \($0)" } ?? "tentative" }

        /// `standing` is "committed" (with `since_seq`, where the entry last changed) or "tentative".
        static func memberJSON(_ m: PeerlogMember) -> JSON {
            let standing: [(String, JSON)] =
                if let seq = m.seq {
                    [("standing", .string("committed")), ("since_seq", .int(seq))]
                } else {
                    [("standing", .string("tentative")), ("since_seq", .null)]
                }
            return .object(
                [
                    ("identity", .string(m.identity.string)), ("role", .string(m.role.rawValue)),
                    ("status", .string(m.status.rawValue)),
                ] + standing)
        }
    }
}

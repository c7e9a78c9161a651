import ArgumentParser
import Foundation
import Peerlog
import PeerlogEncoding

extension GroupCommand {
    /// `group snapshot GROUP`: a snapshot of the committed state now (docs/PROTOCOL.md §23.1).
    struct Snapshot: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "snapshot",
            abstract: "Make a snapshot of a group's committed state now.",
            discussion: """
                A snapshot is the group's committed state at its committed seq, content-addressed and carrying \
                its state hash. A device that joins the group starts from the newest one and takes only the log \
                after it; with retention on, receipts superseded below an acknowledged snapshot are pruned. One is \
                made every \(ReplicaDefaults.snapshotInterval) commits anyway.
                """)
        @OptionGroup var home: HomeOptions
        @OptionGroup var group: GroupArgument
        @Option(
            help: ArgumentHelp(
                "Instead of making one now, set how many commits pass between automatic snapshots of the group on this device (0: none).",
                valueName: "commits"))
        var every: UInt64?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (peerlog, id) = try await home.open(group)
            if let every {
                try await peerlog.setSnapshotInterval(of: id, every)
                if output.json {
                    print(
                        JSON.object([("group", .string(id.string)), ("every", .int(every))]).serialized(pretty: true))
                } else {
                    print(
                        every == 0
                            ? "No automatic snapshots of group \(id) on this device"
                            : "A snapshot of group \(id) every \(every) commits on this device")
                }
                return
            }
            let s = try await peerlog.makeSnapshot(of: id)
            if output.json {
                print(snapshotJSON(s).serialized(pretty: true))
            } else {
                print("Snapshot \(s.cid) of group \(id) at seq \(s.seq) (\(s.bytes) bytes), state hash \(s.stateHash)")
            }
        }
    }

    /// `group compact GROUP`: prune below the watermark now (§23.4).
    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "compact",
            abstract: "Prune a group's superseded receipts below its newest acknowledged snapshot now.",
            discussion: """
                Entity receipts that no current value needs, committed below the newest snapshot every peer has \
                acknowledged (or one older than the retention age), are deleted with their envelopes. Membership, \
                role, key and tombstone receipts and every current value's writer are kept, and `peerlog check` \
                still proves the state (from the snapshot). Exits 0 when something was pruned or nothing could be, \
                saying which.
                """)
        @OptionGroup var home: HomeOptions
        @OptionGroup var group: GroupArgument
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (peerlog, id) = try await home.open(group)
            let result = try await peerlog.compact(id)
            if output.json {
                print(
                    JSON.object([
                        ("group", .string(id.string)), ("floor", .int(try await peerlog.floor(of: id))),
                        ("snapshot", result.map { .string($0.snapshot.string) } ?? .null),
                        ("pruned", .int(result?.pruned ?? 0)),
                    ]).serialized(pretty: true))
            } else if let result {
                print(
                    "Pruned \(result.pruned) receipts of group \(id) below seq \(result.floor) (snapshot \(result.snapshot))"
                )
            } else {
                print(
                    "Nothing to prune in group \(id): no snapshot above the floor (seq \(try await peerlog.floor(of: id))) that every peer has acknowledged; make one with `peerlog group snapshot`"
                )
            }
        }
    }

    /// `group retention GROUP (--on [--min-age DAYS] | --off)`.
    struct Retention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retention",
            abstract:
                "Turn pruning of a group's superseded receipts on or off (off by default); show it without a flag.",
            discussion: """
                With retention on, each automatic snapshot is followed by a compaction (see `group compact`). A \
                snapshot older than --min-age days is a watermark even if a peer has not acknowledged it; such a \
                peer later starts from a snapshot instead of the log.
                """)
        @OptionGroup var home: HomeOptions
        @OptionGroup var group: GroupArgument
        @Flag(help: "Prune superseded receipts.") var on = false
        @Flag(help: "Keep the whole log (the default).") var off = false
        @Option(help: "Days after which a snapshot is pruned below even if a peer has not acknowledged it.")
        var minAge: Int = ReplicaDefaults.retentionMinAgeDays
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if on && off { throw ValidationError("--on and --off exclude each other") }
            if minAge < 0 || minAge > 36_500 { throw ValidationError("--min-age must be 0...36500 days") }
        }

        func run() async throws {
            let (peerlog, id) = try await home.open(group)
            if on { try await peerlog.setRetention(of: id, minimumAge: .seconds(Int64(minAge) * 86_400)) }
            if off { try await peerlog.setRetention(of: id, minimumAge: nil) }
            let now = try await peerlog.retention(of: id)
            let days = now.map { Int($0.components.seconds / 86_400) }
            if output.json {
                print(
                    JSON.object([
                        ("group", .string(id.string)), ("retention", .bool(now != nil)),
                        ("min_age_days", days.map { .int($0) } ?? .null),
                    ]).serialized(pretty: true))
            } else {
                print(
                    days.map { "Retention of group \(id): on, snapshots older than \($0) days are watermarks" }
                        ?? "Retention of group \(id): off (the whole log is kept)")
            }
        }
    }
}

/// Defaults the CLI names in help texts.
enum ReplicaDefaults {
    static let snapshotInterval = 10_000
    static let retentionMinAgeDays = 30
}

func snapshotJSON(_ s: PeerlogSnapshot) -> JSON {
    .object([
        ("cid", .string(s.cid.string)), ("seq", .int(s.seq)), ("state_hash", .string(s.stateHash)),
        ("bytes", .int(s.bytes)), ("made_at", .int(s.madeAt)), ("floor", .bool(s.isFloor)),
    ])
}

import ArgumentParser
import Peerlog
import PeerlogEncoding
import PeerlogNode

extension GroupCommand {
    /// `group limits GROUP [--max-waiting N|default] [--max-waiting-age AGE|default] [--json]`.
    struct Limits: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "limits",
            abstract: "Show or set this device's offline limits for a group (docs/PROTOCOL.md §10.5).",
            discussion: """
                This device's own writes wait for a seq while the group's sequencer is out of reach. At \
                --max-waiting of them (default 100000), or once the oldest is older than --max-waiting-age \
                (default 30d), a write fails with one line and exit status 75, and nothing is written; \
                group operations (leave, remove, delete…) have 100 more and no age limit. Writes pass \
                again once the sequencer commits the waiting ones. The setting is this device's own \
                (never sent); `default` goes back to the default.
                """)
        @OptionGroup var home: HomeOptions
        @OptionGroup var group: GroupArgument
        @Option(help: ArgumentHelp("Most own writes waiting for a seq (0 or more), or default.", valueName: "n"))
        var maxWaiting: String?
        @Option(
            help: ArgumentHelp(
                "Oldest age a waiting write may reach: a number with ms, s, min, h or d (30d), or default.",
                valueName: "age"))
        var maxWaitingAge: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let count = try maxWaiting.map(Self.count)
            let age = try maxWaitingAge.map(Self.age)
            let peerlog: Peerlog
            if count == nil && age == nil {
                peerlog = try await home.openForReading()
            } else {
                peerlog = try await home.open()
            }
            let id = try await group.resolve(in: peerlog)
            if count != nil || age != nil {
                // A limit not given keeps its override (if any); `default` (nil inside) clears it.
                let before = try await peerlog.offlineHeadroom(of: id)
                let keptCount = before.overridesMaxWaiting ? before.limits.maxWaiting : nil
                let keptAge = before.overridesMaxAge ? before.limits.maxAgeMillis : nil
                try await peerlog.setOfflineLimits(maxWaiting: count ?? keptCount, maxAgeMillis: age ?? keptAge, of: id)
            }
            let headroom = try await peerlog.offlineHeadroom(of: id)
            if output.json {
                print(
                    JSON.object([
                        ("group", .string(id.string)), ("waiting", .int(headroom.waiting)),
                        ("max_waiting", .int(headroom.limits.maxWaiting)),
                        ("oldest_age_ms", headroom.oldestAgeMillis.map { .int(Int64($0)) } ?? .null),
                        ("max_age_ms", .int(Int64(headroom.limits.maxAgeMillis))),
                        ("max_waiting_overridden", .bool(headroom.overridesMaxWaiting)),
                        ("max_age_overridden", .bool(headroom.overridesMaxAge)),
                    ]).serialized(pretty: true))
            } else {
                print(StatusText.offlineLine(OfflineStatus(headroom)))
            }
        }

        /// `N` (0 or more) or `default` (nil inside).
        static func count(_ text: String) throws -> Int? {
            if text == "default" { return nil }
            guard let n = Int(text), n >= 0 else {
                throw CLIError("--max-waiting must be a whole number of 0 or more, or default; not \"\(text)\"")
            }
            return n
        }

        /// `AGE` as milliseconds, or `default` (nil inside).
        static func age(_ text: String) throws -> UInt64? {
            if text == "default" { return nil }
            let units: [(String, UInt64)] = [
                ("ms", 1), ("min", 60_000), ("s", 1_000), ("h", 3_600_000), ("d", 86_400_000),
            ]
            for (suffix, size) in units where text.hasSuffix(suffix) {
                if let n = UInt64(text.dropLast(suffix.count)) {
                    let (ms, overflow) = n.multipliedReportingOverflow(by: size)
                    if !overflow { return ms }
                }
                break
            }
            throw CLIError(
                "--max-waiting-age must be a whole number with ms, s, min, h or d (such as 30d or 90min), or default; not \"\(text)\""
            )
        }
    }
}

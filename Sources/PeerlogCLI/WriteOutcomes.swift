import ArgumentParser
import Peerlog
import PeerlogEncoding

/// `--if-absent`, `--if-version RECEIPT`, `--if-value VALUE`: a condition on the key a write
/// changes, decided at the write's committed position (docs/PROTOCOL.md §9.7).
struct ConditionOptions: ParsableArguments {
    @Flag(help: "Write only if the key holds no value when the write is committed.") var ifAbsent = false
    @Option(
        help: ArgumentHelp(
            "Write only if the key was last written by this receipt (as `get --json` shows in \"cid\").",
            valueName: "receipt"))
    var ifVersion: String?
    @Option(
        help: ArgumentHelp(
            "Write only if the key holds this value (a string, or JSON with --json-value).", valueName: "value"))
    var ifValue: String?

    /// The condition given, if any; `json`: --if-value is JSON.
    func condition(json: Bool) throws -> PeerlogCondition? {
        let given = [ifAbsent, ifVersion != nil, ifValue != nil].filter { $0 }.count
        guard given <= 1 else { throw CLIError("give one condition: --if-absent, --if-version or --if-value") }
        if ifAbsent { return .absent }
        if let ifVersion {
            do { return .version(try CID(string: ifVersion)) } catch {
                throw CLIError("--if-version \(ifVersion): not a receipt id (\(error))")
            }
        }
        if let ifValue { return .value(try parseValue(ifValue, json: json, what: "--if-value")) }
        return nil
    }
}

/// `--wait [--timeout SECONDS]`: wait for the write's committed outcome.
struct WaitOptions: ParsableArguments {
    @Flag(
        help:
            "Wait until the write is committed or rejected at commit (exit 3 when rejected, 4 when --timeout passes first)."
    ) var wait = false
    @Option(help: ArgumentHelp("With --wait: give up after this many seconds.", valueName: "seconds"))
    var timeout: Double?

    /// `outcome`, or with `--wait` the final outcome of `cid` (the same when `--timeout` passes first).
    func settled(_ outcome: PeerlogOutcome, of cid: CID, in peerlog: Peerlog) async throws -> PeerlogOutcome {
        guard wait, !outcome.isFinal else { return outcome }
        return try await peerlog.finalOutcome(of: cid, timeout: timeout.map { .milliseconds(Int($0 * 1000)) })
            ?? outcome
    }

    func validate() throws {
        if timeout != nil && !wait { throw ValidationError("--timeout goes with --wait") }
        if let timeout, !(timeout > 0 && timeout <= 86_400 * 365) {
            throw ValidationError("--timeout must be more than 0 seconds (at most a year)")
        }
    }
}

/// A string, or with `json` a JSON value (no floats), as `put --json-value` reads VALUE.
func parseValue(_ text: String, json: Bool, what: String) throws -> CBOR {
    guard json else { return .text(text) }
    do { return try CBOR(json: try JSON.parse(text), allowFloats: false) } catch { throw CLIError("\(what): \(error)") }
}

/// The exit statuses a script reads after a conditional write or `write-status`.
enum WriteExit {
    /// Rejected at commit: a condition failed or an operation could not apply; nothing changed.
    static let rejected: Int32 = 3
    /// Still waiting for the group's sequencer (`--wait --timeout` ran out, or `write-status`).
    static let pending: Int32 = 4
}

extension PeerlogOutcome {
    var text: String {
        switch self {
        case .committed(let seq): "committed at seq \(seq)"
        case .rejected(let seq, let reason): "rejected at seq \(seq): \(reason)"
        case .pending(nil): "pending (waiting for the group's sequencer; the tentative view applies it)"
        case .pending(let guess?): "pending (waiting for the group's sequencer; tentatively rejected: \(guess))"
        }
    }

    var jsonFields: [(String, JSON)] {
        switch self {
        case .committed(let seq): [("outcome", .string("committed")), ("seq", .int(seq)), ("reason", .null)]
        case .rejected(let seq, let reason):
            [("outcome", .string("rejected")), ("seq", .int(seq)), ("reason", .string(reason))]
        case .pending(let guess):
            [("outcome", .string("pending")), ("seq", .null), ("reason", guess.map { .string($0) } ?? .null)]
        }
    }

    /// 0 committed; `WriteExit.rejected`; `WriteExit.pending`, or 0 when pending is fine.
    func exitStatus(pendingIsSuccess: Bool) -> Int32 {
        switch self {
        case .committed: 0
        case .rejected: WriteExit.rejected
        case .pending: pendingIsSuccess ? 0 : WriteExit.pending
        }
    }
}

/// Reports a write whose outcome matters (a condition, a counter, a set, a merge): the receipt
/// and its outcome now, or after `--wait` its final one; exits 3 when rejected at commit, 4 when
/// `--wait --timeout` passed with the write still pending.
func reportOutcome(
    _ write: PeerlogWrite, peerlog: Peerlog, group: GroupID, summary: String, wait: WaitOptions, json: Bool
) async throws {
    var outcome = try await peerlog.outcome(of: write)
    if !json { print(summary) }
    if wait.wait, !outcome.isFinal, !json {
        printError("receipt \(write.cid) written; waiting for the group's sequencer…")
    }
    outcome = try await wait.settled(outcome, of: write.cid, in: peerlog)
    if json {
        print(
            JSON.object(
                [("group", .string(group.string)), ("cid", .string(write.cid.string)), ("type", .string(write.type))]
                    + outcome.jsonFields
            ).serialized(pretty: true))
    } else {
        print("receipt \(write.cid): \(outcome.text)")
    }
    let status = outcome.exitStatus(pendingIsSuccess: !wait.wait)
    if status != 0 { throw ExitCode(status) }
}

/// `peerlog write-status RECEIPT`: what became of a write, also one made before a restart or
/// while offline.
struct WriteStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write-status",
        abstract: "Show whether a write is committed, rejected at commit, or still pending.",
        discussion: """
            Exit status: 0 committed, 3 rejected at commit (a condition failed or an operation could not \
            apply: nothing changed), 4 still pending (no sequencer has ordered it; with --wait, --timeout passed), \
            1 an error (no such receipt here).
            """)
    @OptionGroup var home: HomeOptions
    @Argument(help: "The receipt id a write printed.") var receipt: String
    @OptionGroup var wait: WaitOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let cid: CID
        do { cid = try CID(string: receipt) } catch { throw CLIError("\(receipt): not a receipt id (\(error))") }
        let peerlog = try await home.openForReading()
        let outcome = try await wait.settled(try await peerlog.currentOutcome(of: cid), of: cid, in: peerlog)
        if output.json {
            print(JSON.object([("cid", .string(cid.string))] + outcome.jsonFields).serialized(pretty: true))
        } else {
            print("receipt \(cid): \(outcome.text)")
        }
        let status = outcome.exitStatus(pendingIsSuccess: false)
        if status != 0 { throw ExitCode(status) }
    }
}

extension PeerlogCondition {
    var text: String {
        switch self {
        case .absent: "absent"
        case .version(let cid): "last written by \(cid)"
        case .value(let v): "it holds \(v.json.serialized())"
        }
    }
}

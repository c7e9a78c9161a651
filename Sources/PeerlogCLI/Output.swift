import ArgumentParser
import Peerlog
import PeerlogEncoding

/// `--committed`: read the committed view instead of the default tentative one.
struct ViewOptions: ParsableArguments {
    @Flag(help: "Show the committed view only (default: committed plus tentative receipts).")
    var committed = false

    var view: View { committed ? .committed : .tentative }
}

func parseIdentity(_ text: String) throws -> IdentityID {
    do { return try IdentityID(string: text) } catch {
        throw CLIError("\"\(text)\" is not an identity (expected the b… text printed by `peerlog id`): \(error)")
    }
}

func parseRole(_ text: String) throws -> Role {
    guard let role = Role(rawValue: text) else {
        throw CLIError(
            "\"\(text)\" is not a role (expected one of \(Role.allCases.map(\.rawValue).joined(separator: ", ")))")
    }
    return role
}

/// "committed at seq N" or "tentative".
func statusText(seq: UInt64?) -> String { seq.map { "committed at seq \($0)" } ?? "tentative" }

/// `"status": "committed", "seq": N` or `"status": "tentative", "seq": null`.
func statusJSONFields(seq: UInt64?) -> [(String, JSON)] {
    if let seq {
        [("status", .string("committed")), ("seq", .int(seq))]
    } else {
        [("status", .string("tentative")), ("seq", .null)]
    }
}

extension SequencerAuthority {
    var text: String {
        switch self {
        case .solo(let device): "solo device \(device)"
        case .elected(let voters):
            "elected among \(voters.count) voters: " + voters.map(\.string).joined(separator: ", ")
        case .relay(let key, let address): "relay \(key) at \(address)"
        }
    }

    var json: JSON {
        switch self {
        case .solo(let device): .object([("kind", .string("solo")), ("device", .string(device.string))])
        case .elected(let voters):
            .object([("kind", .string("elected")), ("voters", .array(voters.map { .string($0.string) }))])
        case .relay(let key, let address):
            .object([("kind", .string("relay")), ("key", .string(key.string)), ("address", .string(address))])
        }
    }
}

/// Prints `name: value` rows with the values aligned.
func printRows(_ rows: [(String, String)]) {
    let width = (rows.map(\.0.count).max() ?? 0) + 2
    for (name, value) in rows {
        print(name + ":" + String(repeating: " ", count: width - name.count - 1) + value)
    }
}

/// Prints a table: columns padded to their widest cell, two spaces apart, no trailing blanks.
func printTable(_ rows: [[String]], indent: String = "") {
    guard let columns = rows.map(\.count).max() else { return }
    let widths = (0..<columns).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max()! }
    for row in rows {
        let cells = row.enumerated().map { c, cell in
            c == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[c] - cell.count)
        }
        print(indent + cells.joined(separator: "  "))
    }
}

/// Reports a local write: one line saying what happened, then the receipt and its status.
func printAppend(_ result: PeerlogWrite, group: GroupID, summary: String, json: Bool) {
    if json {
        print(
            JSON.object(
                [
                    ("group", .string(group.string)), ("cid", .string(result.cid.string)),
                    ("type", .string(result.type)),
                ] + statusJSONFields(seq: result.seq)
            ).serialized(pretty: true))
    } else {
        print(summary)
        let note = result.isTentative ? " (waiting for the group's sequencer)" : ""
        print("receipt \(result.cid): \(statusText(seq: result.seq))\(note)")
    }
}

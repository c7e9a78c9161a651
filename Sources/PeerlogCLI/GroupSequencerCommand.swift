import ArgumentParser
import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogNode

extension GroupCommand {
    /// `peerlog group sequencer GROUP solo DEVICE | elected DEVICE… | relay ADDRESS KEY`.
    struct Sequencer: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Propose a new sequencer authority for a group (owners only).",
            discussion: """
            solo DEVICE: one device assigns seqs. elected DEVICE…: 1–9 voter devices elect a leader per term, which \
            assigns seqs once a majority has stored them (an elected voter set changes one voter at a time). \
            relay ADDRESS KEY: a relay at host:port with that key. The change is a receipt: it takes effect from the seq \
            after the one the current sequencer commits it at. Devices are device ids (`peerlog id` shows yours).
            """
        )
        @OptionGroup var home: HomeOptions
        @Argument(help: "The group: its id, or its name if no other group has it.") var group: String
        @Argument(help: "solo, elected or relay.") var kind: String
        @Argument(help: "solo: one device; elected: the voter devices; relay: ADDRESS KEY.") var values: [String] = []
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let authority = try parse()
            try GroupCommand.write(home, group, .sequencerChanged(authority), json: json) { "sequencer of \"\($0)\" → \(authority.text)" }
        }

        func parse() throws -> SequencerAuthority {
            func device(_ text: String) throws -> DeviceID {
                do { return try DeviceID(string: text) } catch { throw CLIError("\(text) is not a device id (`peerlog id` prints one): \(error)") }
            }
            switch kind {
            case "solo":
                guard values.count == 1 else { throw CLIError("solo takes one device") }
                return .solo(try device(values[0]))
            case "elected":
                guard (1...GroupLimits.maxVoters).contains(values.count) else { throw CLIError("elected takes 1 to \(GroupLimits.maxVoters) voter devices") }
                let voters = try values.map(device)
                guard Set(voters).count == voters.count else { throw CLIError("a voter is listed twice") }
                return .elected(voters: voters.sorted())
            case "relay":
                guard values.count == 2 else { throw CLIError("relay takes ADDRESS KEY") }
                return .relay(key: try device(values[1]), address: values[0])
            default:
                throw CLIError("the sequencer is solo, elected or relay, not \(kind)")
            }
        }
    }
}

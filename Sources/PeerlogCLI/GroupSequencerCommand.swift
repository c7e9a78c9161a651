import ArgumentParser
import Peerlog

extension GroupCommand {
    /// `peerlog group sequencer GROUP solo DEVICE | elected DEVICE… | relay ADDRESS KEY`.
    struct Sequencer: GroupWriteArguments {
        static let configuration = CommandConfiguration(
            commandName: "sequencer",
            abstract: "Propose a new sequencer authority for a group (owners only).",
            discussion: """
                solo DEVICE: one device assigns seqs. elected DEVICE…: 1–9 voter devices elect a leader per term, which \
                assigns seqs once a majority has stored them (an elected voter set changes one voter at a time). \
                relay ADDRESS KEY: a relay at host:port with that key. The change is a receipt: it takes effect from the seq \
                after the one the current sequencer commits it at. Devices are device ids (`peerlog id` shows yours).
                """
        )
        @Argument(help: "solo, elected or relay.") var kind: String
        @Argument(help: "solo: one device; elected: the voter devices; relay: ADDRESS KEY.") var values: [String] = []

        func write() throws -> GroupWriteStep {
            let authority = try SequencerAuthority(kind: kind, arguments: values)
            return GroupWriteStep(
                { try await $0.setSequencer(of: $1, to: authority) },
                summary: {
                    "sequencer of \"\($0)\" → \(authority.text)"
                })
        }
    }
}

import ArgumentParser
import Peerlog

/// The arguments of one group write (`group add`, `accept`, `remove`, …) after GROUP: its
/// name and help, and the write they make.
protocol GroupWriteArguments: ParsableArguments {
    /// The subcommand's name and help.
    static var configuration: CommandConfiguration { get }
    /// The write, checked before the home is opened (a bad identity or role fails first).
    func write() throws -> GroupWriteStep
}

/// A group write through the facade, and the line that reports it given the group's name.
struct GroupWriteStep {
    let perform: (Peerlog, GroupID) async throws -> PeerlogWrite
    let summary: (String) -> String

    init(_ perform: @escaping (Peerlog, GroupID) async throws -> PeerlogWrite, summary: @escaping (String) -> String) {
        self.perform = perform
        self.summary = summary
    }
}

/// Every group write subcommand: `peerlog group VERB [--home DIR] GROUP ARGUMENTS… [--json]`.
/// Parse, write through the facade, report the receipt.
struct GroupWrite<Arguments: GroupWriteArguments>: AsyncParsableCommand {
    static var configuration: CommandConfiguration { Arguments.configuration }

    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @OptionGroup var arguments: Arguments
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let step = try arguments.write()
        let (peerlog, id) = try await home.open(group)
        // The name before the write: a rename reports the old one.
        let name = try await peerlog.group(id)?.name ?? id.string
        printAppend(try await step.perform(peerlog, id), group: id, summary: step.summary(name), json: output.json)
    }
}

import ArgumentParser
import Peerlog

/// `GROUP`: a group id, or the name of a group this replica holds if no other group has it.
struct GroupArgument: ParsableArguments {
    @Argument(help: "The group: its id, or its name if no other group has it.") var group: String

    /// The group's id; fails when `peerlog` holds no such group.
    func resolve(in peerlog: Peerlog) async throws -> GroupID { try await peerlog.groupID(group) }
}

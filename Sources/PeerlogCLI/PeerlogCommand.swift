import ArgumentParser

@main
struct PeerlogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peerlog",
        abstract: "Offline-first peer-to-peer replication of signed receipts.",
        version: "0.1.0",
        subcommands: [
            Init.self, Id.self, SafetyNumberCommand.self, Inspect.self, ReceiptCommand.self,
            GroupCommand.self, Put.self, Get.self, DeleteCommand.self, LogCommand.self, StateHash.self,
            Export.self, Import.self, DeadLetters.self, Check.self, Daemon.self, Status.self, Peers.self, Invites.self, CaptureCommand.self, Replay.self, RelayCommand.self, Debug.self,
        ]
    )

    static func main() async {
        if let problem = RawArguments.invalidUTF8Problem() { exit(withError: CLIError(problem)) }
        await main(nil)
    }
}

/// A failure reported to the user as one line.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

import ArgumentParser
import PeerlogCrypto

@main
struct PeerlogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peerlog",
        abstract: "Offline-first peer-to-peer replication of signed receipts.",
        version: "0.1.0",
        subcommands: [
            Init.self, Id.self, SafetyNumberCommand.self, Inspect.self, ReceiptCommand.self,
            GroupCommand.self, Put.self, Get.self, DeleteCommand.self, LogCommand.self, StateHash.self,
            Export.self, Import.self, DeadLetters.self, Check.self, Daemon.self, Status.self, Peers.self, Invites.self,
            InviteCommand.self, DeviceCommand.self,
            CaptureCommand.self, Replay.self, RelayCommand.self, Debug.self,
            IdentityCommand.self,
            DeviceCommand.self,
        ]
    )

    static func main() async {
        if let problem = RawArguments.invalidUTF8Problem() {
            exit(withError: CLIError(problem, code: .invalidArguments))
        }
        await main(nil)
    }
}

/// A failure reported to the user as one line (ArgumentParser prints it and exits with 1).
/// The CLI's one error type, in the shape of `SequencerError`: a ``code``, where it was raised,
/// and equality on the code only; the line itself is the user's.
struct CLIError: CodedError {
    /// What went wrong; compare against the static members.
    typealias Code = ErrorCode<CLIError>

    let code: Code
    let description: String
    let file: String
    let line: Int

    init(_ message: String, code: Code = .failed, file: String = #fileID, line: Int = #line) {
        self.code = code
        description = message
        self.file = file
        self.line = line
    }
}

extension ErrorCode where Domain == CLIError {
    /// The arguments cannot be used as given (bad UTF-8, a flag combination, a bad file).
    static let invalidArguments = Self("invalidArguments")
    /// The command could not do its work (the line says why).
    static let failed = Self("failed")
}

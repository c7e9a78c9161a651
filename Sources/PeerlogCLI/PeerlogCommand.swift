import ArgumentParser
import Peerlog
import PeerlogCrypto
import PeerlogQuickCalls

@main
struct PeerlogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peerlog",
        abstract: "Offline-first peer-to-peer replication of signed receipts.",
        version: PeerlogVersion.current,
        subcommands: [
            Init.self, Id.self, SafetyNumberCommand.self, Inspect.self, ReceiptCommand.self,
            GroupCommand.self, Put.self, Get.self, BlobCommand.self, DeleteCommand.self, Incr.self, SetAdd.self,
            SetRemove.self, Merge.self, WriteStatus.self, LogCommand.self,
            StateHash.self,
            Export.self, Import.self, DeadLetters.self, Check.self, Daemon.self, Status.self, Peers.self, Invites.self,
            InviteCommand.self, DeviceCommand.self,
            CaptureCommand.self, Replay.self, RelayCommand.self, Debug.self,
            IdentityCommand.self,
        ]
    )

    static func main() async {
        if let problem = RawArguments.invalidUTF8Problem() {
            exit(withError: CLIError(problem, code: .invalidArguments))
        }
        // ArgumentParser's own `main`, but a write refused by an offline limit exits with 75
        // (EX_TEMPFAIL): nothing was written and the same write passes later, once the group's
        // sequencer commits this device's waiting writes, so a script can tell it from a refusal.
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as PeerlogError where error.code == .offlineLimit {
            printError(fullMessage(for: error))
            exit(withError: ExitCode(offlineLimitExitStatus))
        } catch {
            exit(withError: error)
        }
    }

    /// The exit status of a write refused by an offline limit (docs/PROTOCOL.md §10.5).
    static let offlineLimitExitStatus: Int32 = 75
}

/// A failure reported to the user as one line (ArgumentParser prints it and exits with 1).
/// The CLI's one error type, a `CodedFailure`: a code, where it was raised,
/// and equality on the code only; the line itself is the user's.
typealias CLIError = CodedFailure<CLIDomain>

/// The domain of `CLIError`.
enum CLIDomain: ErrorDomain {
    /// Its detail is a whole sentence.
    static var wording: ErrorWording { .detail }
}

extension CodedFailure where Domain == CLIDomain {
    /// A failure whose line is `message`.
    init(_ message: String, code: Code = .failed, file: String = #fileID, line: Int = #line) {
        self.init(code, message, file: file, line: line)
    }
}

extension ErrorCode where Domain == CLIError {
    /// The arguments cannot be used as given (bad UTF-8, a flag combination, a bad file).
    static let invalidArguments = Self("invalidArguments")
    /// The command could not do its work (the line says why).
    static let failed = Self("failed")
}

import PeerlogCrypto
import PeerlogModel

#if canImport(Glibc)
import Glibc
#endif

/// Where the backup commands get a passphrase: `PEERLOG_PASSPHRASE` when it is set (even to
/// the empty string, which is then refused as empty); otherwise, when standard input is a
/// terminal, a prompt on standard error read without echo; otherwise one clear error.
enum Passphrase {
    static let environmentVariable = "PEERLOG_PASSPHRASE"

    /// The passphrase; with `confirm`, a prompted one is asked for twice and must match.
    static func read(prompt: String, confirm: Bool) throws -> String {
        if let value = getenv(environmentVariable) { return String(cString: value) }
        guard isatty(0) == 1 else {
            throw CLIError(
                "no passphrase: set \(environmentVariable), or run on a terminal to be asked for it",
                code: .invalidArguments)
        }
        let first = try readHidden(prompt: prompt)
        if confirm {
            let second = try readHidden(prompt: "Repeat the passphrase: ")
            guard first == second else { throw CLIError("the two passphrases differ; nothing was written") }
        }
        return first
    }

    /// One line from the terminal on standard input, echo off, restored afterwards (also when a
    /// signal ends the process meanwhile). Echo goes off before the prompt shows, and without
    /// flushing: what is typed once the prompt shows is never echoed and never discarded (with
    /// TCSAFLUSH, a line typed in the instant before echo went off was lost, and the command
    /// waited for input forever).
    private static func readHidden(prompt: String) throws -> String {
        var err = StandardError()
        guard tcgetattr(0, &savedTerminal) == 0 else {
            throw CLIError("cannot read the terminal settings: \(String(cString: strerror(errno)))")
        }
        var silent = savedTerminal
        silent.c_lflag &= ~tcflag_t(ECHO)
        // Not SIGTSTP: a stopped job keeps echo off, and the shell restores its terminal on `fg`.
        let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
        for s in signals {
            signal(s) { received in
                tcsetattr(0, TCSANOW, &savedTerminal)
                signal(received, SIG_DFL)
                raise(received)
            }
        }
        tcsetattr(0, TCSANOW, &silent)
        print(prompt, terminator: "", to: &err)
        defer {
            tcsetattr(0, TCSANOW, &savedTerminal)
            for s in signals { signal(s, SIG_DFL) }
            print("", to: &err)
        }
        var line = [UInt8]()
        defer { SecureBytes.zero(&line) }
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || byte == 0x0a { break }
            // Far past the limit: stop keeping bytes, the length check refuses it anyway.
            if line.count <= IdentityBackup.maxPassphraseBytes { line.append(byte) }
        }
        byte = 0
        guard let text = String(validating: line, as: UTF8.self) else {
            throw CLIError("the passphrase is not valid UTF-8", code: .invalidArguments)
        }
        return text
    }
}

/// The terminal's settings before a passphrase prompt, for the signal handlers, which can
/// capture nothing.
nonisolated(unsafe) private var savedTerminal = termios()

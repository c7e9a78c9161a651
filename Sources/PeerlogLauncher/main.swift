import PeerlogQuickCalls

#if canImport(Glibc)
import Glibc
#endif

// `peerlog`: the calls scripts make most, answered in about a millisecond, without the full
// CLI's start-up (Foundation, the argument parser's scans of its protocol conformances, an
// 80 MB binary): `--version`, and a plain `put` handed to the home's running daemon. Every
// other call, and a `put` no daemon takes, runs `peerlog-full` with the same arguments.
if FullCommand.argumentsAreUTF8 {
    let arguments = CommandLine.arguments.dropFirst()
    if arguments.elementsEqual(["--version"]) {
        print(PeerlogVersion.current)
        exit(0)
    }
    if let status = QuickPut.run(arguments) { exit(status) }
}
FullCommand.replaceProcess()

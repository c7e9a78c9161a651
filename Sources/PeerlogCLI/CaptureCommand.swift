import ArgumentParser
import Foundation
import Peerlog
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogEncoding

/// `peerlog capture …`: record, inspect and decrypt protocol traffic (docs/TOOLS.md).
struct CaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Record, show and decrypt protocol traffic (pcapng; see docs/TOOLS.md).",
        subcommands: [CaptureStart.self, CaptureStop.self, CaptureShow.self, CaptureDecrypt.self, CaptureAnnotate.self]
    )
}

/// Printed whenever a capture starts: the file holds what the encryption protects.
let captureWarning =
    "warning: a capture holds decrypted traffic (receipt bodies included unless --omit-bodies); keep the file private"

struct CaptureFileOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Start a new file (FILE.1, FILE.2, …) when one reaches this size (at least \(CaptureWriter.minRotationBytes)).",
            valueName: "bytes"))
    var maxBytes: Int?

    @Flag(help: "Leave receipt bodies out (type, author, counter and CID stay); such a capture cannot be replayed.")
    var omitBodies = false

    var options: CaptureWriter.Options { .init(maxBytes: maxBytes, omitBodies: omitBodies) }

    func validate() throws {
        if let maxBytes, maxBytes < CaptureWriter.minRotationBytes {
            throw ValidationError("--max-bytes must be at least \(CaptureWriter.minRotationBytes)")
        }
    }
}

func absolutePath(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
}

struct CaptureStart: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Start capturing on the running daemon.")
    @OptionGroup var home: HomeOptions
    @OptionGroup var file: CaptureFileOptions
    @Argument(help: "The pcapng file to write (replaced if it exists).") var path: String

    func run() throws {
        let status = try PeerlogDaemon(home: home.path).startCapture(
            path: absolutePath(path), maxBytes: file.maxBytes, omitBodies: file.omitBodies)
        printError(captureWarning)  // once the capture runs: a refused start is one error line
        print("capturing to \(status.path)")
    }
}

struct CaptureStop: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the running daemon's capture.")
    @OptionGroup var home: HomeOptions

    func run() throws {
        let status = try PeerlogDaemon(home: home.path).stopCapture()
        print("stopped: \(status.records) records in \(status.files.joined(separator: ", "))")
    }
}

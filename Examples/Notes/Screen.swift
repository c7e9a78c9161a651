import Foundation

/// Writes a line to standard output at once (no stdio buffering, so a pipe sees it now).
func writeLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

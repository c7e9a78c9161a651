// peerlog-notes: a shared to-do list in the terminal, built only on `import Peerlog`.
// Two laptops run it; they find each other on the LAN, show each other's changes as they
// arrive, mark items no sequencer has ordered yet as tentative, and flag reorders.
// Type `help` once it runs. docs: README.md, "Embed Peerlog in your app".
import Foundation  // exit(2); everything else is Peerlog and the standard library
import Peerlog

let options: NotesOptions
do { options = try NotesOptions(CommandLine.arguments.dropFirst()) } catch {
    print("peerlog-notes: \(error)\n\n\(NotesOptions.usage)")
    exit(2)
}
let app = try await NotesApp(options)
try await app.run()

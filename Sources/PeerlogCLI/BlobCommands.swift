import ArgumentParser
import Foundation
import Peerlog
import PeerlogEncoding

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog blob …`: the blobs this home holds (docs/PROTOCOL.md §24).
struct BlobCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blob",
        abstract: "List, fetch, pin and collect the blobs (large values) this home holds.",
        discussion: """
            A value put with --value-file over \(Peerlog.blobThresholdBytes) bytes (or any size with --blob) is \
            stored as a blob: the receipt carries its id, size and (in an encrypted group) its key, and the bytes \
            follow in chunks, each checked against the id. A running daemon fetches every blob of at most 64 MiB \
            as soon as a value references it, and larger ones when asked (`get --out`, `blob fetch`).
            """,
        subcommands: [BlobList.self, BlobFetch.self, BlobPin.self, BlobUnpin.self, BlobGC.self])
}

struct BlobList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the blobs held here: id, size, bytes held (or evicted), put here or fetched, pinned, sealed.")
    @OptionGroup var home: HomeOptions
    @Flag(help: "Print a JSON array.") var json = false

    func run() async throws {
        let peerlog = try await home.openForReading()
        let blobs = try await peerlog.blobs()
        if json {
            print(JSON.array(blobs.map(BlobFetch.json)).serialized(pretty: true))
            return
        }
        printTable(
            blobs.map {
                [
                    $0.id.string, String($0.size),
                    $0.isHeld ? "whole" : $0.isEvicted ? "evicted" : "\($0.heldBytes) held",
                    $0.isLocal ? "put here" : "fetched",
                    $0.isPinned ? "pinned" : "",
                    $0.isSealed ? "sealed" : "",
                ]
            })
    }
}

struct BlobFetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Ask the daemon to fetch the blob a key's value references, and wait until it is here.",
        discussion: "Exit status 1 when it is not here within --wait seconds (the daemon goes on fetching).")
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The entity key whose value is a blob.") var key: String
    @Option(help: "Seconds to wait for the blob (0: ask and return at once).") var wait = 600
    @Flag(help: "Print the blob as JSON.") var json = false

    func run() async throws {
        let (peerlog, id) = try await home.open(group)
        let blob = try await Self.fetch(key, in: id, peerlog: peerlog, wait: wait)
        if json {
            print(Self.json(blob).serialized(pretty: true))
        } else if blob.isHeld {
            print("blob \(blob.id) is here (\(blob.size) bytes)")
        } else {
            print("fetching blob \(blob.id): \(blob.heldBytes) of \(blob.size) bytes here")
        }
    }

    /// Asks for the blob and waits up to `wait` seconds, drawing progress on a terminal.
    static func fetch(_ key: String, in group: GroupID, peerlog: Peerlog, wait: Int) async throws -> PeerlogBlob {
        let deadline = ContinuousClock.now + .seconds(wait)
        // The value itself may not be here yet (its receipt is on its way): wait for it too.
        while try await peerlog.entry(key, in: group) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        var blob = try await peerlog.fetchBlob(key, in: group)
        let terminal = isatty(2) == 1
        while !blob.isHeld && ContinuousClock.now < deadline {
            if terminal {
                let share = blob.size == 0 ? 1 : Double(blob.heldBytes) / Double(blob.size)
                let bar =
                    String(repeating: "#", count: Int(share * 30)) + String(repeating: ".", count: 30 - Int(share * 30))
                FileHandle.standardError.write(
                    Data(
                        String(
                            format: "\r\u{1b}[Kfetching [%@] %d%% %.1f/%.1f MiB", bar, Int(share * 100),
                            Double(blob.heldBytes) / 1_048_576, Double(blob.size) / 1_048_576
                        ).utf8))
            }
            try await Task.sleep(for: .milliseconds(100))
            blob = try await peerlog.blob(key, in: group) ?? blob
        }
        if terminal { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
        if wait > 0 && !blob.isHeld {
            throw CLIError(
                "blob \(blob.id) of \"\(key)\" is not here after \(wait) s (\(blob.heldBytes) of \(blob.size) bytes): is the daemon running, and a peer that holds it connected? The daemon goes on fetching it"
            )
        }
        return blob
    }

    static func json(_ b: PeerlogBlob) -> JSON {
        .object([
            ("id", .string(b.id.string)), ("size", .int(b.size)), ("held", .int(b.heldBytes)),
            ("whole", .bool(b.isHeld)), ("pinned", .bool(b.isPinned)), ("sealed", .bool(b.isSealed)),
            ("local", .bool(b.isLocal)), ("evicted", .bool(b.isEvicted)),
        ])
    }
}

struct BlobPin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin", abstract: "Keep a blob held here even when no current value references it.")
    @OptionGroup var home: HomeOptions
    @Argument(help: "The blob id (from `blob list`).") var blob: String

    func run() async throws { try await Self.set(blob, pinned: true, in: home) }

    /// Pins or unpins `blob`; one error line when no such blob is held.
    static func set(_ blob: String, pinned: Bool, in home: HomeOptions) async throws {
        let peerlog = try await home.open()
        guard try await peerlog.pinBlob(try BlobID(string: blob), pinned) else {
            throw CLIError("no blob \(blob) is held here")
        }
        print("\(pinned ? "pinned" : "unpinned") \(blob)")
    }
}

struct BlobUnpin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin", abstract: "Let `blob gc` collect a blob again.")
    @OptionGroup var home: HomeOptions
    @Argument(help: "The blob id (from `blob list`).") var blob: String

    func run() async throws { try await BlobPin.set(blob, pinned: false, in: home) }
}

struct BlobGC: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc", abstract: "Delete the blobs held here that no current value references and no pin keeps.")
    @OptionGroup var home: HomeOptions

    func run() async throws {
        let peerlog = try await home.open()
        let gone = try await peerlog.collectBlobs()
        print("collected \(gone.count) blob(s), \(gone.reduce(0) { $0 + $1.heldBytes }) bytes")
    }
}

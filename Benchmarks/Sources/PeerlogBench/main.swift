import Foundation

// Prints figures and ratios measured in one run (build with -c release):
//   swift run -c release --package-path Benchmarks peerlog-bench [foundation|replica|net|all] [--seconds S] [--million-store PATH]
//   peerlog-bench catchup N | restart [N] | elected N FAILOVERS | relay N [--postgres URL] | noise | batch [BATCHES] [SIZE] | ingest N [--single]
//   peerlog-bench writes [SCHEDULES]   (conditional vs plain writes; mixed committed ingest; SCHEDULES property runs, 10,000)
//   peerlog-bench claims [DEVICES] [NAMES]   (DEVICES members claim the same NAMES offline, then settle through a relay)
//   peerlog-bench groups [G]   (3 daemons sharing G groups and 1 group: catch-up, idle CPU, RSS, a write's reach)
//   peerlog-bench relayscale [G] [D]   (a relay sequencing G groups for D daemons: connect, idle CPU, RSS, a write's reach)
//   peerlog-bench events [N] [ROUNDS]   (ingest with and without a change-stream consumer)
//   peerlog-bench encryption [N]   (sealed vs plaintext ingest; an epoch rotation to 36 devices)
//   peerlog-bench floor [UPDATES]   (join from a snapshot vs full catch-up; store size with retention on/off)
//   peerlog-bench transfer [N] [--old N_OLD]   (real `peerlog export`/`import` processes: peak RSS and time)
//   peerlog-bench scale [W1,W2,…] [--appends N]   (append with W receipts waiting; default 1000,10000,100000; W=0: no backlog, a reference)
//   peerlog-bench offline [W1,W2,…] [--appends N]   (append with W of this device's own writes waiting; default 1000,100000)
//   peerlog-bench statuspage [N1,N2,…] [--catchup N]   (--http: scrape time by log size, default 1000,100000; catch-up of N with a page open vs none, default 100000, 0: none)
// Ratios compare work to raw Ed25519 verification measured in the same process, so they hold
// across machines better than absolute rates do.

var args = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    defer { args.removeSubrange(i...(i + 1)) }
    return args[i + 1]
}
secondsPerFigure = option("--seconds").flatMap(Double.init) ?? 1.0
let millionStore = option("--million-store")
let postgresURL = option("--postgres")
let fixedAppends = option("--appends").flatMap(Int.init)
let oldTransferCount = option("--old").flatMap(Int.init)
let catchUpCount = option("--catchup").flatMap(Int.init)
let which = args.first ?? "all"
if which == "open-get", args.count == 2 {
    try openAndGet(path: args[1])
    exit(0)
}
if which == "catchup", args.count == 2, let count = Int(args[1]) {
    try daemonCatchUpBench(count: count)
    exit(0)
}
if which == "statuspage" {
    let counts = args.count > 1 ? args[1].split(separator: ",").compactMap { Int($0) } : [1_000, 100_000]
    try statusPageBench(counts: counts, catchUpAt: catchUpCount ?? 100_000)
    exit(0)
}
if which == "groups" {
    // `groups [G]`: 3 daemons sharing G groups (default 1,000) and 1 group, same run (issue 37).
    try groupsBench(count: args.count > 1 ? Int(args[1]) ?? 1_000 : 1_000)
    exit(0)
}
if which == "relayscale" {
    // `relayscale [G] [D]`: one relay sequencing G groups (default 10,000) for D daemons (200).
    try relayScaleBench(
        groups: args.count > 1 ? Int(args[1]) ?? 10_000 : 10_000, devices: args.count > 2 ? Int(args[2]) ?? 200 : 200)
    exit(0)
}
if which == "restart" {
    // `restart [N]`: items re-sent on reconnection after each side's restart (issue 18).
    try daemonRestartBench(count: args.count > 1 ? Int(args[1]) ?? 20_000 : 20_000)
    exit(0)
}
if which == "elected" {
    try electedBench(
        count: args.count > 1 ? Int(args[1]) ?? 2000 : 2000, failovers: args.count > 2 ? Int(args[2]) ?? 5 : 5)
    exit(0)
}
if which == "relay" {
    // `relay N [--postgres URL]`: SQLite relay (one process) or PostgreSQL relay (two processes).
    try relayBench(count: args.count > 1 ? Int(args[1]) ?? 2000 : 2000, postgres: postgresURL)
    exit(0)
}
if which == "writes" {
    // `writes [SCHEDULES]`: issue 36's conditional/merge figures and SCHEDULES property runs (10,000).
    try await writesBench(schedules: args.count > 1 ? Int(args[1]) ?? 10_000 : 10_000)
    exit(0)
}
if which == "claims" {
    // `claims [DEVICES] [NAMES]`: offline claims of the same names settled through a real relay.
    try claimsBench(
        devices: args.count > 1 ? Int(args[1]) ?? 10 : 10, names: args.count > 2 ? Int(args[2]) ?? 1_000 : 1_000)
    exit(0)
}
if which == "batch" {
    // `batch [BATCHES] [SIZE]`: Replica.appendBatch against raw Ed25519 signing.
    try batchBench(
        batches: args.count > 1 ? Int(args[1]) ?? 50 : 50, size: args.count > 2 ? Int(args[2]) ?? 1_000 : 1_000)
    exit(0)
}
if which == "transfer" {
    // `transfer [N] [--old N_OLD]`: issue 18's export/import figure (peak RSS < 128 MiB at 1M).
    try transferBench(count: args.count > 1 ? Int(args[1]) ?? 1_000_000 : 1_000_000, oldCount: oldTransferCount)
    exit(0)
}
if which == "transfer-old-import", args.count == 3 {
    try oldWholeFileImport(home: args[1], file: args[2])
    exit(0)
}
if which == "scale" {
    let list =
        args.count > 1
        ? args[1].split(separator: ",").compactMap { Int($0.replacingOccurrences(of: "_", with: "")) }
        : [1_000, 10_000, 100_000]
    try scaleBench(waiting: list, appends: fixedAppends)
    exit(0)
}
if which == "floor" {
    // `floor [UPDATES]`: issue 18's figures (default 1,000,000 updates).
    try floorBench(
        updates: args.count > 1 ? Int(args[1].replacingOccurrences(of: "_", with: "")) ?? 1_000_000 : 1_000_000)
    exit(0)
}
if which == "offline" {
    let list =
        args.count > 1
        ? args[1].split(separator: ",").compactMap { Int($0.replacingOccurrences(of: "_", with: "")) }
        : [1_000, 100_000]
    try offlineBench(waiting: list, appends: fixedAppends)
    exit(0)
}
if which == "events" {
    // `events [N] [ROUNDS]`: committed ingest with and without a change-stream consumer.
    try await eventsBench(
        count: args.count > 1 ? Int(args[1]) ?? 20_000 : 20_000, rounds: args.count > 2 ? Int(args[2]) ?? 5 : 5)
    exit(0)
}
if which == "blobs" {
    // `blobs [SIZES_MB] [--big MiB] [--writes N]`: issue 34's figures (BlobBench.swift).
    let big = option("--big").flatMap(Int.init) ?? 1_024
    let writes = option("--writes").flatMap(Int.init) ?? 200
    let sizes = args.count > 1 ? args[1].split(separator: ",").compactMap { Int($0) } : [5, 50]
    try await blobBench(sizes: sizes, bigMiB: big, writes: writes)
    exit(0)
}
if which == "sync", args.count == 2, let count = Int(args[1]) {
    // The in-process sync catch-up of `net` alone (for callgrind).
    try syncCatchUpBench(count: count)
    exit(0)
}
if which == "ingest" {
    // `ingest N [--single]`: the committed ingest alone (for callgrind).
    try ingestProfileBench(count: args.count > 1 ? Int(args[1]) ?? 10_000 : 10_000, single: args.contains("--single"))
    exit(0)
}
if which == "encryption" {
    // `encryption [N]`: sealed against plaintext committed ingest, and an epoch rotation's CPU.
    try encryptionBench(count: args.count > 1 ? Int(args[1]) ?? 20_000 : 20_000)
    exit(0)
}
if which == "tcp-sink", args.count == 2, let total = Int(args[1]) {
    try tcpSink(total: total)
    exit(0)
}
if which == "noise", args.count == 1 {
    try noiseBench(megabytes: 512)
    exit(0)
}
if which == "noise-memory", (2...3).contains(args.count), let megabytes = Int(args[1]) {
    // The in-memory channel alone, for `valgrind --tool=callgrind` (no sockets, no child);
    // an optional message size in bytes (fragmented past 65,518).
    let memory = try channelInMemory(
        megabytes: megabytes, messageBytes: args.count == 3 ? Int(args[2]) ?? noiseBenchMessage : noiseBenchMessage)
    figure("channel send in memory", String(format: "%.2f GB/s", memory.send / 1e9))
    figure("channel receive in memory", String(format: "%.2f GB/s", memory.receive / 1e9))
    exit(0)
}
if which == "noise-sink", args.count == 2, let total = Int(args[1]) {
    try noiseSink(total: total)
    exit(0)
}
guard ["foundation", "replica", "net", "all"].contains(which) else {
    FileHandle.standardError.write(
        Data("usage: peerlog-bench [foundation|replica|net|all] [--seconds S] [--million-store PATH]\n".utf8))
    exit(64)
}
#if DEBUG
print("warning: this is a debug build; figures are meaningless (use swift run -c release peerlog-bench)")
#endif
print("peerlog-bench: \(secondsPerFigure) s per figure, \(ProcessInfo.processInfo.activeProcessorCount) cores")
if which != "net" {
    print("\n== foundation")
    let rawVerify = try foundationBench()
    if which != "foundation" {
        print("\n== replica")
        try replicaBench(rawVerify: rawVerify, millionStore: millionStore)
    }
}
if which == "net" || which == "all" {
    print("\n== network")
    try noiseBench(megabytes: 512)
    try syncCatchUpBench(count: 100_000)
    try daemonCatchUpBench(count: 100_000)
}

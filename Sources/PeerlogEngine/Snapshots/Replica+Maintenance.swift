import Foundation
import PeerlogModel
import PeerlogStore

/// Automatic snapshots and compaction (docs/PROTOCOL.md §23.4), each in a transaction of its
/// own after the commits that crossed a group's snapshot interval. Retention exists to save
/// space, so it never blocks receiving commits: one that cannot be written (a full disk) is
/// skipped, reported (`IngestReport.maintenanceSkipped`, `maintenanceSkipped(of:)`), and tried
/// again at the group's next interval or by `retryPending` a minute later. A compaction is not
/// even started when the disk's free space is below its estimate (`compactionNeed`).
extension Replica {
    /// How long after a failure `retryPending` tries a group's snapshot and compaction again (ms).
    static let maintenanceRetryMillis: UInt64 = 60_000

    /// The last automatic snapshot or compaction of `group` that could not complete, until one does.
    public func maintenanceSkipped(of group: GroupID) -> MaintenanceSkipped? {
        maintenanceFailures.withLock { $0[group] }
    }

    func snapshotAndCompact(_ groups: [GroupID], into report: inout IngestReport) {
        for group in groups {
            do {
                _ = try write { p in
                    do { _ = try p.makeSnapshot(group) } catch let e as ReplicaError
                        where e.code == .snapshotUnavailable
                    {
                        return
                    }
                }
                // Never start what the disk cannot hold: a compaction that fails halfway has
                // already grown the WAL by what it wrote, which is space other writers need.
                if try retention(of: group) != nil, let short = compactionShortfall(group) {
                    throw ReplicaError(.diskFull, short)
                }
                let done = try write { p in
                    if let result = try p.compact(group) { p.report.compactions.append(result) }
                }
                report.compactions += done.compactions
                maintenanceFailures.withLock { $0[group] = nil }
            } catch {
                let skipped = MaintenanceSkipped(
                    group: group, reason: maintenanceReason(error, group: group), at: clock())
                maintenanceFailures.withLock { $0[group] = skipped }
                report.maintenanceSkipped.append(skipped)
                // Short of space either way: give the WAL's pages back to the disk now rather
                // than at the next automatic checkpoint, which only resets it for reuse.
                if Store.isDiskFull(error) || (error as? ReplicaError)?.code == .diskFull {
                    _ = store.truncateWAL()
                }
            }
        }
    }

    /// Why compacting `group` now would not fit on the disk (its estimate, with a margin that
    /// leaves room for commits), or nil when it fits or the free space is unknown.
    func compactionShortfall(_ group: GroupID) -> String? {
        guard let free = Self.freeBytes(atPathOf: store.path), let need = compactionNeed(group), free < need.bytes
        else { return nil }
        return
            "compacting group \(group) prunes about \(need.count) receipts and needs about \(Self.megabytes(need.bytes)) free for its write-ahead log; \(Self.megabytes(free)) free"
    }

    /// What a compaction of `group` would prune now and the space it needs: every page it
    /// changes (the rows, their index entries) goes to the WAL first, about three times the
    /// rows' bytes, plus 4 MB left for commits.
    func compactionNeed(_ group: GroupID) -> (count: Int, bytes: Int)? {
        let estimate = try? store.read { db -> (count: Int, bytes: Int)? in
            guard let newest = try db.snapshotSummaries(group: group).first?.seq else { return nil }
            return try db.pruneEstimate(group: group, below: newest)
        }
        guard let estimate = estimate ?? nil, estimate.count > 0 else { return nil }
        return (estimate.count, estimate.bytes * 3 + 4_000_000)
    }

    func retryMaintenance(into report: inout IngestReport) {
        let now = clock()
        let due = maintenanceFailures.withLock { failures in
            failures.values.filter { now >= $0.at &+ Self.maintenanceRetryMillis }.map(\.group)
        }
        if !due.isEmpty { snapshotAndCompact(due.sorted(), into: &report) }
    }

    /// One line: for a full disk, what a compaction needs and the space free now.
    func maintenanceReason(_ error: any Error, group: GroupID) -> String {
        if let e = error as? ReplicaError, e.code == .diskFull {
            return "not enough space: \(e.detail); skipped (commits go on), tried again at the next snapshot interval"
        }
        guard Store.isDiskFull(error) else { return "snapshot or compaction of group \(group) failed: \(error)" }
        return
            "the disk is full: \(spaceNeeded(group)); skipped (commits go on), tried again at the next snapshot interval"
    }

    /// What a compaction of `group` needs and the space free now, in words.
    func spaceNeeded(_ group: GroupID) -> String {
        let free = Self.freeBytes(atPathOf: store.path).map { "\(Self.megabytes($0)) free" } ?? "free space unknown"
        guard let need = compactionNeed(group) else { return "a snapshot of group \(group) needs space (\(free))" }
        return
            "compacting group \(group) prunes about \(need.count) receipts and needs about \(Self.megabytes(need.bytes)) free for its write-ahead log (\(free))"
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }

    static func freeBytes(atPathOf path: String) -> Int? {
        var s = statvfs()
        let dir = (path as NSString).deletingLastPathComponent
        guard statvfs(dir.isEmpty ? "." : dir, &s) == 0 else { return nil }
        return Int(s.f_bavail) * Int(s.f_frsize)
    }
}

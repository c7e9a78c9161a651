import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// What an app sees of one key: the tentative view's value (nil: absent) and whether a
/// waiting receipt decides it (tentative) or the committed prefix does.
struct VisibleEntity: Equatable {
    var value: [UInt8]?
    var tentative: Bool
}

/// A committed entity row as a transaction wrote it (nil bytes: deleted).
struct CommittedValue {
    let bytes: [UInt8]?
}

struct ViewKey: Hashable, Comparable {
    let group: GroupID
    let key: String
    static func < (l: ViewKey, r: ViewKey) -> Bool { l.group != r.group ? l.group < r.group : l.key < r.key }
}

/// The kinds of change-log rows (docs/PROTOCOL.md §10.4).
public enum ChangeLogKind: String, Sendable, CaseIterable {
    case invited, members, entity, reordered, committed, rejected, deleted
    /// A blob fetched or imported for the group is whole here (`key`: its id's text form).
    case blob
}

/// Bits of an `entity` row's `flags`.
public enum ChangeLogFlags {
    public static let oldPresent: Int64 = 1, oldTentative: Int64 = 2, newPresent: Int64 = 4, newTentative: Int64 = 8,
        reordered: Int64 = 16
}

/// The change log (docs/PROTOCOL.md §10.4): at the end of each settle, the changes an app sees,
/// in the same transaction as the changes themselves. Entity rows compare each key's visible
/// state before the transaction first touched it with its state now, so a key written and
/// then shadowed in one transaction yields one row, and one that ends as it began yields none.
extension Pipeline {
    /// Call before the first write to `key`'s committed or tentative row in this transaction.
    mutating func noteViewChange(_ group: GroupID, key: String) throws {
        let k = ViewKey(group: group, key: key)
        guard changeLog.viewBefore[k] == nil else { return }
        changeLog.viewBefore[k] = try visible(k)
    }

    mutating func visible(_ k: ViewKey) throws -> VisibleEntity {
        if try overlayMayHoldEntities(k.group), let row = try db.overlayEntity(k.group, key: k.key) {
            return VisibleEntity(value: row.value, tentative: true)
        }
        return VisibleEntity(value: try db.entity(group: k.group, key: k.key)?.value, tentative: false)
    }

    /// False when the group's view has no tentative entity rows: then a key's visible state is
    /// its committed row, and the overlay need not be read per key (a catch-up commits
    /// thousands of receipts into groups with nothing waiting). Set when a row is written.
    mutating func overlayMayHoldEntities(_ group: GroupID) throws -> Bool {
        if let known = overlay.hasEntities[group] { return known }
        let has = try db.hasOverlayEntities(group)
        overlay.hasEntities[group] = has
        return has
    }

    /// Entity keys written by receipts this transaction stored, in groups where the committed
    /// order differed from the tentative guess. A key that changed without one of these moved
    /// because of the order alone: it was reordered. Read before `maintainOverlays`.
    mutating func entityKeysStoredInGroupsWithReorders() throws -> Set<ViewKey> {
        var groups = Set<GroupID>()
        for e in report.events.dropFirst(changeLog.eventsLogged) {
            if case .reordered(let g, _, _, _) = e { groups.insert(g) }
        }
        guard !groups.isEmpty else { return [] }
        var keys = Set<ViewKey>()
        for r in caches.storedHere.values where groups.contains(r.group) && r.type.hasPrefix("entity.") {
            for key in try openedOperation(r)?.changedEntityKeys ?? [] {
                keys.insert(ViewKey(group: r.group, key: key))
            }
        }
        return keys
    }

    /// Writes this settle's rows: invitations, membership, entities, reorders, committed
    /// ranges, rejections, deletions (in that order), then prunes past the retention window.
    mutating func logChanges(storedKeys: Set<ViewKey>) throws {
        let events = report.events.dropFirst(min(changeLog.eventsLogged, report.events.count))
        changeLog.eventsLogged = report.events.count
        var facts = ChangeFacts()
        for e in events { facts.note(e, stored: caches.storedHere, local: local.identity) }

        var rows = facts.invited.map {
            ChangeLogRow(group: $0.group, kind: ChangeLogKind.invited.rawValue, cid: $0.cid, at: now)
        }
        rows += facts.membership.sorted().map { ChangeLogRow(group: $0, kind: ChangeLogKind.members.rawValue, at: now) }
        var reordered = [GroupID: [String]]()
        for (k, before) in changeLog.viewBefore.sorted(by: { $0.key < $1.key }) where !facts.deleted.contains(k.group) {
            let after: VisibleEntity
            if overlay.hasEntities[k.group] == false, let written = caches.committedHere[k] {
                after = VisibleEntity(value: written.bytes, tentative: false)  // no tentative row can shadow it
            } else {
                after = try visible(k)
            }
            guard after != before else { continue }
            var flags: Int64 = 0
            if before.value != nil { flags |= ChangeLogFlags.oldPresent }
            if before.tentative { flags |= ChangeLogFlags.oldTentative }
            if after.value != nil { flags |= ChangeLogFlags.newPresent }
            if after.tentative { flags |= ChangeLogFlags.newTentative }
            if facts.reordering.contains(k.group), before.value != after.value, !storedKeys.contains(k) {
                flags |= ChangeLogFlags.reordered
                reordered[k.group, default: []].append(k.key)
            }
            rows.append(
                ChangeLogRow(
                    group: k.group, kind: ChangeLogKind.entity.rawValue, key: k.key, oldValue: before.value,
                    newValue: after.value, flags: flags, at: now))
        }
        changeLog.viewBefore = [:]
        caches.committedHere = [:]
        rows += reordered.sorted { $0.key < $1.key }.map { g, keys in
            ChangeLogRow(
                group: g, kind: ChangeLogKind.reordered.rawValue,
                newValue: CBOREncoder.encode(.array(keys.map(CBOR.text))), at: now)
        }
        rows += facts.committed.sorted { $0.key < $1.key }.map { g, range in
            ChangeLogRow(
                group: g, kind: ChangeLogKind.committed.rawValue, firstSeq: range.first, lastSeq: range.last, at: now)
        }
        rows += facts.rejected.map {
            ChangeLogRow(
                group: $0.group, kind: ChangeLogKind.rejected.rawValue, cid: $0.cid, reason: $0.reason, at: now)
        }
        rows += facts.deleted.sorted().map { ChangeLogRow(group: $0, kind: ChangeLogKind.deleted.rawValue, at: now) }
        guard !rows.isEmpty else { return }
        var last: Int64 = 0
        for row in rows { last = try db.appendChange(row) }
        // Prune once per 1,024 rows written: amortized O(1) per row.
        if (last >> 10) != ((last - Int64(rows.count)) >> 10) { try db.pruneChanges(keep: limits.changeLogRetention) }
    }
}

/// What one settle's events say, per group.
private struct ChangeFacts {
    var invited: [(group: GroupID, cid: CID)] = []
    var membership = Set<GroupID>()
    var reordering = Set<GroupID>()
    var committed: [GroupID: (first: UInt64, last: UInt64)] = [:]
    var rejected: [(group: GroupID, cid: CID, reason: String)] = []
    var deleted = Set<GroupID>()

    mutating func note(_ e: ReplicaEvent, stored: [CID: Receipt], local: IdentityID) {
        switch e {
        case .tentative(let g, let cid, let type):
            guard type.hasPrefix("group.") else { return }
            membership.insert(g)
            if type == "group.member_added", let r = stored[cid], r.identity != local,
                case .memberAdded(let identity, _)? = try? GroupOperation(receiptType: r.type, body: r.body),
                identity == local
            {
                invited.append((g, cid))
            }
        case .committed(let g, let seq, let cid, let type, let reason):
            let range = committed[g]
            committed[g] = (min(range?.first ?? seq, seq), max(range?.last ?? seq, seq))
            if let reason {
                rejected.append((g, cid, reason))
            } else if type == "group.deleted" {
                deleted.insert(g)
            } else if type.hasPrefix("group.") {
                membership.insert(g)
            }
        case .reordered(let g, _, _, _):
            reordering.insert(g)
        case .refused(let g, let cid, let reason):
            rejected.append((g, cid, reason))
        default:
            break
        }
    }
}

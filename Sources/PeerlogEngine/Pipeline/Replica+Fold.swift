import Dispatch
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore
import Synchronization

/// The views a replica builds: the committed fold, and the tentative one on top of it.
extension Replica {

    /// Which entities a fold materializes: reads of one key or of membership stay cheap on big groups.
    enum EntityScope: Equatable {
        case none
        case key(String)
        case all
    }

    /// `state: false` leaves the group state out (the caller sets it).
    func committedFold(
        group: GroupID, db: StoreDB, entities scope: EntityScope = .all, state withState: Bool = true
    ) throws -> Fold {
        let state = withState ? try db.groupStateBlob(group: group).map { try GroupState(storedBytes: $0) } : nil
        var entities = [String: EntityValue]()
        func add(_ e: (key: String, value: [UInt8], cid: CID, seq: UInt64)) throws {
            entities[e.key] = EntityValue(
                key: e.key, value: try CBORDecoder.decodeStrict(e.value), cid: e.cid, status: .committed(seq: e.seq))
        }
        switch scope {
        case .none: break
        case .key(let key): if let e = try db.entity(group: group, key: key) { try add((key, e.value, e.cid, e.seq)) }
        case .all: for e in try db.entities(group: group) { try add(e) }
        }
        var fold = Fold(group: group, state: state, entities: entities)
        fold.scope = scope
        return fold
    }

    /// Gives a fold of an encrypted group the keys this device holds, so the tentative sealed
    /// receipts folded on top open (§22.5); read only where receipts are folded, not per read.
    func openSealed(in fold: inout Fold, db: StoreDB) throws {
        if fold.state?.encryption != nil {
            fold.keys = try KeyringStorage.keys(group: fold.group, db: db, local: local)
        }
    }

    /// Tentative receipts in tentative order, without those of authors flagged for equivocation.
    func tentativeReceipts(group: GroupID, db: StoreDB) throws -> [Receipt] {
        let flagged = try db.flaggedAuthors(group: group)
        let held = try db.tentativeReceipts(group: group).map(\.receipt).filter { r in
            flagged[r.author].map { r.counter < $0 } ?? true
        }
        return TentativeOrder.order(held)
    }

    /// The group in a view: the committed tables, and for the tentative view the maintained
    /// overlay on top (docs/PROTOCOL.md §11.1), or a fold from scratch where it is not maintained.
    func fold(group: GroupID, view: View, db: StoreDB, entities scope: EntityScope = .all) throws -> Fold {
        guard view == .tentative, try !db.isTombstoned(group: group), let overlay = try db.overlayGroup(group),
            overlay.fresh
        else {
            return try foldFromScratch(group: group, view: view, db: db, entities: scope)
        }
        var fold = try committedFold(group: group, db: db, entities: scope, state: false)
        fold.state = try overlay.state.map { try GroupState(storedBytes: $0) }
        if fold.state?.status == .deleted {
            fold.entities = [:]  // a tentative deletion drops every entity (§10.1)
            return fold
        }
        func shadow(_ key: String, _ value: [UInt8]?, _ cid: CID) throws {
            fold.entities[key] = try value.map {
                EntityValue(key: key, value: try CBORDecoder.decodeStrict($0), cid: cid, status: .tentative)
            }
        }
        switch scope {
        case .none: break
        case .key(let key): if let row = try db.overlayEntity(group, key: key) { try shadow(key, row.value, row.cid) }
        case .all: for row in try db.overlayEntities(group) { try shadow(row.key, row.value, row.cid) }
        }
        return fold
    }

    /// The oracle: the committed tables plus every tentative receipt folded in tentative order.
    func foldFromScratch(group: GroupID, view: View, db: StoreDB, entities scope: EntityScope = .all) throws -> Fold {
        guard view == .tentative, try !db.isTombstoned(group: group) else {
            return try committedFold(group: group, db: db, entities: scope)
        }
        let tentative = try tentativeReceipts(group: group, db: db)
        // An `entity.write` reads other keys than the one asked for: fold them all then.
        let reads = scope == .none || !tentative.contains { $0.type == EntityWrite.receiptType } ? scope : .all
        var fold = try committedFold(group: group, db: db, entities: reads)
        try openSealed(in: &fold, db: db)
        for r in tentative { _ = fold.apply(r, status: .tentative) }
        if reads != scope, case .key(let key) = scope {
            fold.entities = fold.entities.filter { $0.key == key }
            fold.scope = scope
        }
        return fold
    }
}

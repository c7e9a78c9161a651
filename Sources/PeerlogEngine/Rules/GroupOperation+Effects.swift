extension GroupOperation {
    /// The entity key a put or delete writes.
    var entityKey: String? {
        switch self {
        case .entityPut(let key, _), .entityDelete(let key): key
        default: nil
        }
    }

    /// Every entity key it may change: a put's or delete's key, an `entity.write`'s changed keys.
    var changedEntityKeys: [String] {
        switch self {
        case .entityPut(let key, _), .entityDelete(let key): [key]
        case .entityWrite(let write): write.changedKeys
        default: []
        }
    }

    /// Whether it can change the group state (members, roles, settings, sequencer, status).
    var changesGroupState: Bool {
        switch self {
        case .entityPut, .entityDelete, .entityWrite, .application, .sealed: false
        default: true
        }
    }
}

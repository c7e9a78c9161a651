import PeerlogEngine

/// The replica's sync queries live in PeerlogEngine (Replica+Sync.swift); this only declares them.
extension Replica: SyncStore {}

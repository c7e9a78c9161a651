import GRDB

/// Schema migrations: frozen once shipped, one per file, applied in order.
enum Migrations {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("0001_initial", migrate: Migration0001.migrate)
        m.registerMigration("0002_elected_sequencer", migrate: Migration0002.migrate)
        m.registerMigration("0003_invalid_receipt_evidence", migrate: Migration0003.migrate)
        m.registerMigration("0004_tentative_overlay", migrate: Migration0004.migrate)
        m.registerMigration("0005_change_log", migrate: Migration0005.migrate)
        m.registerMigration("0006_sequencer_change_index", migrate: Migration0006.migrate)
        m.registerMigration("0007_drop_outbox", migrate: Migration0007.migrate)
        m.registerMigration("0008_revocations", migrate: Migration0008.migrate)
        m.registerMigration("0009_epoch_keys", migrate: Migration0009.migrate)
        m.registerMigration("0010_snapshots", migrate: Migration0010.migrate)
        m.registerMigration("0011_offline_limits", migrate: Migration0011.migrate)
        m.registerMigration("0012_evidence_caps", migrate: Migration0012.migrate)
        m.registerMigration("0013_blobs", migrate: Migration0013.migrate)
        m.registerMigration("0014_blob_cache", migrate: Migration0014.migrate)
        m.registerMigration("0015_blob_format", migrate: Migration0015.migrate)
        m.registerMigration("0016_overlay_merge_steps", migrate: Migration0016.migrate)
        m.registerMigration("0017_group_operation_events", migrate: Migration0017.migrate)
        m.registerMigration("0018_envelope_runs", migrate: Migration0018.migrate)
        m.registerMigration("0019_parent_links_once", migrate: Migration0019.migrate)
        m.registerMigration("0020_no_entities_cid_index", migrate: Migration0020.migrate)
        m.registerMigration("0021_receipt_writers_numbered", migrate: Migration0021.migrate)
        m.registerMigration("0022_envelopes_by_receipt_row", migrate: Migration0022.migrate)
        return m
    }
}

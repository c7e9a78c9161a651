#ifndef PEERLOG_CSQLITETUNING_H
#define PEERLOG_CSQLITETUNING_H

/// Sets how many bytes of a statement journal SQLite keeps in memory before it moves the
/// journal to a temporary file (SQLITE_CONFIG_STMTJRNL_SPILL). sqlite3_config is variadic,
/// which Swift cannot call. Returns SQLITE_OK, or SQLITE_MISUSE once SQLite is initialized
/// in this process (the setting applies only before the first connection opens).
int peerlog_sqlite_statement_journal_spill(int bytes);

#endif

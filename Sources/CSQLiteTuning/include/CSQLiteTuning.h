#ifndef PEERLOG_CSQLITETUNING_H
#define PEERLOG_CSQLITETUNING_H

/// Sets how many bytes of a statement journal SQLite keeps in memory before it moves the
/// journal to a temporary file (SQLITE_CONFIG_STMTJRNL_SPILL). sqlite3_config is variadic,
/// which Swift cannot call. Returns SQLITE_OK, or SQLITE_MISUSE once SQLite is initialized
/// in this process (the setting applies only before the first connection opens).
int peerlog_sqlite_statement_journal_spill(int bytes);

/// Binding and stepping a prepared statement without GRDB's per-value boxing, for the statements
/// the store runs per receipt (`StoreDB.run`). `statement` is a `sqlite3_stmt *`; blobs and text
/// are copied (SQLITE_TRANSIENT), so the caller's buffers may go once the call returns; an empty
/// one binds an empty value, not NULL.
/// Each returns an SQLite result code.
int peerlog_sqlite_bind_int64(void *statement, int index, long long value);
int peerlog_sqlite_bind_blob(void *statement, int index, const void *bytes, int count);
int peerlog_sqlite_bind_text(void *statement, int index, const unsigned char *utf8, int count);
int peerlog_sqlite_bind_null(void *statement, int index);
/// Resets `statement` and clears its bindings (SQLITE_OK, or the last step's error).
int peerlog_sqlite_reset(void *statement);
/// Steps `statement` until SQLITE_DONE (returned) or an error (returned); rows are skipped.
int peerlog_sqlite_step_all(void *statement);
/// One step of `statement`: SQLITE_ROW, SQLITE_DONE or an error.
int peerlog_sqlite_step(void *statement);
/// Column `index` (from 0) of the current row: its SQLite type (SQLITE_INTEGER 1, SQLITE_BLOB 4,
/// SQLITE_NULL 5, ...), its value as an integer, or its bytes as a blob or UTF-8 text with their
/// count in `count`. The bytes stay valid until the statement steps, resets or reads the column
/// again as another type.
int peerlog_sqlite_column_type(void *statement, int index);
long long peerlog_sqlite_column_int64(void *statement, int index);
const void *peerlog_sqlite_column_blob(void *statement, int index, int *count);
const unsigned char *peerlog_sqlite_column_text(void *statement, int index, int *count);
/// Whether the connection `statement` belongs to is outside any transaction (autocommit).
int peerlog_sqlite_autocommit(void *statement);

#endif

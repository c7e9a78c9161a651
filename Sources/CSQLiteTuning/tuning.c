#include "CSQLiteTuning.h"

#include <sqlite3.h>

int peerlog_sqlite_statement_journal_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}

int peerlog_sqlite_bind_int64(void *statement, int index, long long value) {
    return sqlite3_bind_int64((sqlite3_stmt *)statement, index, value);
}

int peerlog_sqlite_bind_blob(void *statement, int index, const void *bytes, int count) {
    return sqlite3_bind_blob((sqlite3_stmt *)statement, index, count ? bytes : "", count, SQLITE_TRANSIENT);
}

int peerlog_sqlite_bind_text(void *statement, int index, const unsigned char *utf8, int count) {
    return sqlite3_bind_text((sqlite3_stmt *)statement, index, count ? (const char *)utf8 : "", count, SQLITE_TRANSIENT);
}

int peerlog_sqlite_bind_null(void *statement, int index) {
    return sqlite3_bind_null((sqlite3_stmt *)statement, index);
}

int peerlog_sqlite_reset(void *statement) {
    int code = sqlite3_reset((sqlite3_stmt *)statement);
    sqlite3_clear_bindings((sqlite3_stmt *)statement);
    return code;
}

int peerlog_sqlite_step_all(void *statement) {
    int code;
    while ((code = sqlite3_step((sqlite3_stmt *)statement)) == SQLITE_ROW) {}
    return code;
}

int peerlog_sqlite_autocommit(void *statement) {
    return sqlite3_get_autocommit(sqlite3_db_handle((sqlite3_stmt *)statement));
}

int peerlog_sqlite_step(void *statement) {
    return sqlite3_step((sqlite3_stmt *)statement);
}

int peerlog_sqlite_column_type(void *statement, int index) {
    return sqlite3_column_type((sqlite3_stmt *)statement, index);
}

long long peerlog_sqlite_column_int64(void *statement, int index) {
    return sqlite3_column_int64((sqlite3_stmt *)statement, index);
}

const void *peerlog_sqlite_column_blob(void *statement, int index, int *count) {
    const void *bytes = sqlite3_column_blob((sqlite3_stmt *)statement, index);
    *count = sqlite3_column_bytes((sqlite3_stmt *)statement, index);
    return bytes;
}

const unsigned char *peerlog_sqlite_column_text(void *statement, int index, int *count) {
    const unsigned char *text = sqlite3_column_text((sqlite3_stmt *)statement, index);
    *count = sqlite3_column_bytes((sqlite3_stmt *)statement, index);
    return text;
}

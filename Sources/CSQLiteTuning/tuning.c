#include "CSQLiteTuning.h"

#include <sqlite3.h>

int peerlog_sqlite_statement_journal_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}

#!/usr/bin/env python3
"""What each storage change not yet made would save (issue 37, item 6): applies it to copies of
a writer's store from tools/bench_store_bytes.sh, in SQL, and prints each table's and index's
pages per write after VACUUM, every change on top of the ones before. A projection, not the
product: each copy holds the same rows a store with that change would, with dummy bytes where
only a length matters. Usage: store_bytes_what_if.py N STORE (tools/bench_store_bytes.sh N --what-if)."""
import os
import shutil
import sqlite3
import sys
import tempfile

n, store = int(sys.argv[1]), sys.argv[2]
scratch = tempfile.mkdtemp()

# Each step: (label, SQL), applied on top of the steps before it.
STEPS = [
    ("as stored", ""),
    # A 16-byte group id stored as a small integer (a numbering table per store, as `authors`
    # numbers receipt authors since migration 0021) in every per-receipt table and index.
    ("group numbered", """
        DROP TRIGGER IF EXISTS overlay_receipt_committed; DROP TRIGGER IF EXISTS waiting_receipt_committed;
        DROP TRIGGER IF EXISTS group_operation_sequenced;
        UPDATE receipts SET group_id = 1;
        UPDATE envelopes SET group_id = 1;
        UPDATE entities SET group_id = 1;
        UPDATE change_log SET group_id = 1;
        UPDATE snapshots SET group_id = 1;"""),
]

results = {}
path = os.path.join(scratch, "copy.sqlite")
shutil.copy(store, path)
for label, sql in STEPS:
    c = sqlite3.connect(path)
    c.executescript(sql)
    c.commit()
    c.execute("VACUUM")
    results[label] = dict(c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
    c.close()
shutil.rmtree(scratch)

names = sorted(set().union(*results.values()), key=lambda t: -results["as stored"].get(t, 0))
print(f"\nwhat each change would save: bytes per write after VACUUM, each column with the changes left of it")
print(f"{'table or index':32s}" + "".join(f"{k[:26]:>28s}" for k in results))
for t in names:
    row = [r.get(t, 0) / n for r in results.values()]
    if max(row) >= 1:
        print(f"{t:32s}" + "".join(f"{v:28.1f}" for v in row))
print(f"{'total':32s}" + "".join(f"{sum(r.values()) / n:28.1f}" for r in results.values()))

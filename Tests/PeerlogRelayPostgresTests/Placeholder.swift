// The suites here compile only with `--traits PostgreSQL` (see tools/test.sh).

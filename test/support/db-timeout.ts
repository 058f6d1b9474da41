// The tests' own connections to the database (to seed and count what no API shows) wait this long
// per operation: they are instruments, and a suite running many processes against one FerretDB on
// two cores can queue an operation past the service's 2 s default without anything being wrong.
export const TEST_DATABASE_TIMEOUT_MS = 30_000;

// Package catalog keeps Gauntlet's definitions: domains, level
// configurations, tests, evaluators, tools and black-box targets.
//
// The definitions directory is the source of truth, in the YAML layout
//
//	evaluators/<evaluator_id>.yaml
//	tools/<tool_id>.yaml
//	targets/<target_id>.yaml             (black-box targets, read-only here)
//	domains/<domain_id>/domain.yaml
//	domains/<domain_id>/level-<n>.yaml   (level settings and its tests)
//
// and a SQLite database (see harness/store) holds a cache of it that serves
// every read. A Catalog validates each write with harness.Validator, writes
// the file first (atomically) and the cache second; if either step fails,
// both are left as they were. Sync rebuilds the cache from the files,
// reporting each file it refuses; Open runs a sync.
//
// A write to a file that changed on disk since the last sync fails with
// harness.ErrConflict rather than overwrite the hand edit; sync first.
//
// Files are strict: a key the format does not know (a typo such as "typ"
// for "type") is an error for its file, reported with its line and the
// nearest known key, and the file loads nothing. Check reads a directory
// the same way without a database, for "gauntlet validate".
//
// A write of one file is a rename of a synced temporary file. A write of
// several (an import, a move, a domain's deletion) is staged in a hidden
// folder and switched in with renames after a commit point, so that a crash
// at any moment leaves the old files or the new ones; Open completes or
// discards what a crash left, and removes stray temporary files.
//
// A Catalog is safe for concurrent use: writes are serialised, reads run
// in parallel against the cache.
//
// # Without a database
//
// Load reads the same layout from any fs.FS (an embed.FS narrowed with
// fs.Sub, os.DirFS, a testing/fstest.MapFS) into a read-only Catalog that
// keeps the definitions in memory: no database, nothing to close. Its
// files are read by the same code, with the same strict rules and
// per-file errors; its reads return what a database-backed catalog
// returns; its writes fail with an error wrapping ErrReadOnly. It is what
// a program that embeds a suite gives the engine as its
// Options.Definitions, which needs Export, and streams the tests of a
// large suite through Outline and EachTest when it has them (both kinds
// of catalog do).
package catalog

// Package runs stores evaluation runs in the database: one row per run,
// one per finished test result, and one per finished matrix cell (domain ×
// level), so that the matrix of a large run reads from a few rows and one
// cell's results from an index.
//
// The engine writes a result as soon as the test finishes; nothing that
// finished is lost if the process dies. At start-up, MarkInterrupted turns
// runs left "running" into "interrupted".
package runs

// Package dataset turns existing datasets into Gauntlet tests: rows of a
// JSON Lines or CSV file become harness.Test values for one domain and
// level, each checked with the same rules the catalog applies to a write,
// so that a row the import accepts is never refused later.
//
// # Columns
//
// A row gives a test its prompt, its expected answer and, optionally, the
// answer's type and the test's id. Without a Mapping, the prompt is read
// from the first of the columns "prompt", "input" and "question" the row
// has, the answer from "answer" or "target", the type from "type" and the
// id from "id". A Mapping names other columns. A row without a type gets
// Options.Type, else "exact".
//
// In JSON Lines, each non-blank line is one JSON object and a column is a
// key; strings, numbers and booleans are read as text, null counts as
// missing. In CSV the first record is the header that names the columns
// (matched exactly, else ignoring case and surrounding spaces); fields may
// be quoted and hold newlines, and Options.Delimiter picks ';' or a tab
// instead of ','. A UTF-8 byte order mark at the start is ignored in both
// formats.
//
// # Conversations
//
// A row with a "turns" or "messages" column is a multi-turn test
// (harness.Test.Turns) instead: "turns" holds a JSON list of {"user",
// "expected"?} (expected the answer alone, or an object {answer, type…}),
// "messages" an OpenAI-shaped JSON list of {"role", "content"} in which
// each user message is a turn and an assistant message the expected answer
// of the user turn before it (a system message is refused: the level's
// system prompt applies). In CSV the cell holds the JSON text, and a
// header with such a column needs no prompt or answer column. Turns
// without a type take the row's type, else Options.Type. A row with both
// a prompt and a conversation is refused.
//
// # Presets
//
//   - "gsm8k": JSON Lines {"question", "answer"} as GSM8K publishes it;
//     the expected answer is the text after the last "####" with commas
//     removed ("#### 1,200" → "1200"), and the type is numeric.
//   - "mmlu": a question and four choices. JSON Lines {"question",
//     "choices": [4 items], "answer": 0-3 or a letter A-D}, or CSV records
//     question,A,B,C,D,answer without a header, as MMLU publishes them (a
//     first record whose last field is "answer" is taken for a header and
//     skipped). The prompt is the question followed by the choices, one per
//     line as "A. …"; the expected answer is the letter, of type choice.
//
// With a preset, a Mapping may rename the prompt, answer and id columns of
// JSON Lines; it cannot give a type, which the preset fixes, and headerless
// MMLU CSV has no names to map.
//
// # Rows and errors
//
// Rows are numbered from 1 in the order of the data: blank JSON Lines lines
// and the CSV header do not count, so row 1 is the first line of data.
// RowError.Line gives where a row starts in the file (from 1, counting
// every line, the header and blank ones included), for an editor. A row
// that cannot be read or fails validation is a RowError naming its row and,
// where it can, the column: `row 7: column "answer": missing`. Validation
// is the catalog's, size included: a test holds at most
// harness.MaxRecordBytes of text, as one created through the API, so a
// row with a larger cell is refused naming that cell's column. A problem
// with the whole input (an unknown format or preset, a CSV header without
// the needed columns, an unknown domain, too much data) is an error of
// Parse instead, wrapping harness.ErrInvalid or ErrTooLarge.
//
// # Ids
//
// A test's id is the row's id column when it has one (it must be a valid
// test id). Otherwise it is generated from the content: "d-" followed by 16
// hex digits of a SHA-256 of the domain, level, prompt, answer and type.
// The same row imported into the same level again gets the same id, so a
// re-import updates its tests instead of adding copies; two rows with the
// same content are one test, and the second is reported as a duplicate.
//
// # Limits
//
// The input is untrusted: Parse reads at most Options.MaxBytes (64 MiB by
// default, the API's body limit) and Options.MaxRows rows (100 000 by
// default), and reports anything malformed as an error, never a panic.
//
// # Writing
//
// Import parses rows and stores them through a catalog in one multi-file
// write (the level's file first, then the cache). A row whose id names a
// test of another domain or level is refused rather than moved. When any
// row is refused nothing is written, unless Options.SkipInvalid asks to
// write the valid rows and report the others.
package dataset

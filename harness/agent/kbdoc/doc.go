// Package kbdoc turns the files of an agent's knowledge base into text:
// [Extract] reads UTF-8 text, Markdown, HTML, PDF (its text layer) and
// DOCX, and returns a [Document], the text as sections, each with its
// heading path and position (its page, for a PDF), which retrieval cuts
// into chunks.
//
// The format is found from the content and the name together. Content
// decides for the binary formats: bytes starting with "%PDF-" are read as
// a PDF and a zip archive as a DOCX whatever the name says, while a name
// ending in .pdf or .docx whose bytes are not a PDF or a zip is refused.
// Text (valid UTF-8 without NUL bytes) is read by its extension: .md and
// .markdown as Markdown, .html, .htm and .xhtml as HTML (or text starting
// with an HTML doctype or <html> tag), anything else as plain text.
//
// What cannot be read gives an error wrapping [ErrUnsupported] whose
// message says why: content that is neither text nor a PDF or DOCX, a PDF
// with no text layer at all (a scan), an encrypted PDF, a DOCX that is not
// a zip or has no word/document.xml, a damaged file. A PDF some of whose
// pages have no text is read, and those pages are listed in
// [Document.EmptyPages]. HTML is reduced to its text: scripts, styles,
// templates and comments are dropped, never run nor kept as markup.
//
// Size limits of the files ([MaxBytes]) are the caller's to enforce as it
// reads; Extract checks them again and gives [ErrTooLarge].
//
// # Limits and the child process
//
// A document is untrusted: a few kilobytes can inflate to gigabytes, a PDF
// page tree can refer to itself, a page count can claim 2^31 pages. Each
// extraction is bounded ([Options], with defaults): the text it gives
// (10 MiB), its sections, the pages of a PDF (10 000), the decompressed
// size of each stream or archive part (64 MiB) and of all (256 MiB), the
// objects looked at (100 000), nesting (256 levels), time (30 s) and
// memory (512 MiB). Past a size limit the error wraps [ErrTooLarge]; a
// document that cannot be read within them (a cyclic page tree, nesting
// too deep, the time limit) gives [ErrUnsupported]; the message names the
// limit.
//
// Some of a reader's work cannot be bounded from inside: the PDF reader's
// parsing, its allocations. So PDF, DOCX and HTML are extracted in a child
// process, the program's own executable started again, when the program
// called [RunIfChild] first thing in main:
//
//	func main() {
//		kbdoc.RunIfChild() // a child extracts one document and exits here
//		...
//	}
//
// The child's memory is bounded by the system (its data segment, on
// Linux) and watched by the parent, which kills it past MaxMemory or the
// time limit, and reads at most what a document within the limits can
// be. Tests of packages that extract documents do the same in TestMain.
//
// Without the hook everything is extracted in the calling process, with
// every limit but memory: the text, pages, sizes, objects and nesting are
// counted as they are read, and the call returns at the time limit, but a
// reader caught where it checks nothing keeps its goroutine busy until its
// next check, and what the PDF reader allocates is not bounded. Text and
// Markdown, linear in their size, are always extracted in process.
package kbdoc

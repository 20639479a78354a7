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
// Size limits ([MaxBytes]) are the caller's to enforce as it reads; Extract
// checks them again and gives [ErrTooLarge].
package kbdoc

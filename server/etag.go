package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Entity tags of definition records (domains, levels, tests, evaluators,
// tools). A record's ETag is a strong tag derived from its JSON as the API
// returns it, so it changes exactly when something a client can see
// changes, whoever made the change (the API, an import, a hand edit and a
// sync). It names the record, not the bytes on the wire: a compressed
// answer carries the same tag.
//
// The read of one record and the answers of its writes carry the tag; a
// write (PUT, DELETE, the move of a test) with If-Match is done only when
// one of the tags listed is the record's current one, or the list is "*"
// (any existing record); otherwise it is a 412 and nothing changes. The
// comparison is made under the catalog's lock, so two clients that read
// the same record and both write with its tag cannot both succeed: the
// second gets the 412 instead of silently undoing the first's change. A
// read with If-None-Match naming the current tag is a 304 without a body.
//
// huma's conditional package is not used: it compares "*" in If-Match as a
// tag (RFC 9110 makes it match any existing record), and it would document
// and honour If-Modified-Since, which definition records cannot answer (they
// have no modification time).

// etagOf returns the strong entity tag of a record as the API returns it:
// the first 128 bits of the SHA-256 of its JSON, in hex, quoted. The JSON
// of a record is deterministic (struct fields in order, map keys sorted).
func etagOf(record any) string {
	b, err := json.Marshal(record)
	if err != nil {
		// The API's records are plain data: this cannot happen.
		panic("server: record does not encode: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// IfMatchHeader is the If-Match header of a write of a definition record.
// It is exported only because huma finds the parameters of an input's
// embedded structs by their exported names; servers have no use for it.
type IfMatchHeader struct {
	IfMatch []string `header:"If-Match" doc:"Write only if the record's current ETag is one of these (comma-separated, quoted as the ETag header gives it), or any existing record with *. Otherwise 412 and nothing changes. Absent: no condition."`
}

// check returns nil when the write may go on over a record whose current
// tag is current, else the 412 error, carrying the current tag.
func (p *IfMatchHeader) check(current string) error {
	if len(p.IfMatch) == 0 {
		return nil
	}
	for _, m := range p.IfMatch {
		if m = strings.TrimSpace(m); m == "*" || opaqueTag(m) == current {
			return nil
		}
	}
	err := huma.NewError(http.StatusPreconditionFailed,
		"the record changed since it was read: its ETag is now "+current+"; read it again and retry",
		&huma.ErrorDetail{Location: "header.If-Match", Message: "matches no current ETag", Value: strings.Join(p.IfMatch, ", ")})
	return huma.ErrorWithHeaders(err, http.Header{"ETag": {current}})
}

// IfNoneMatchHeader is the If-None-Match header of the read of a definition
// record. Exported for huma, as IfMatchHeader is.
type IfNoneMatchHeader struct {
	IfNoneMatch []string `header:"If-None-Match" doc:"A 304 without a body when the record's current ETag is one of these (or with *): the copy the client holds is current."`
}

// check returns the 304 answer when the client's copy is current, else nil.
func (p *IfNoneMatchHeader) check(current string) error {
	for _, m := range p.IfNoneMatch {
		if m = strings.TrimSpace(m); m == "*" || opaqueTag(m) == current {
			return huma.ErrorWithHeaders(huma.Status304NotModified(), http.Header{"ETag": {current}})
		}
	}
	return nil
}

// opaqueTag drops a weak prefix: a proxy that compresses answers may have
// weakened the tag it passed on, and the record is still the same one.
func opaqueTag(tag string) string {
	return strings.TrimPrefix(tag, "W/")
}

// Documentation of the operations that take the headers above.
const (
	etagReadDoc  = " The answer's ETag header names this state of the record; with If-None-Match naming it, the answer is a 304 without a body."
	etagWriteDoc = " The answer's ETag header names the record's new state. With If-Match, the write is done only if the record's current ETag is listed (or the list is *), else 412 and nothing changes."
)

// documentNotModified declares the 304 answer of a read that takes
// If-None-Match.
func documentNotModified(api huma.API, path string) {
	op := operation(api.OpenAPI(), http.MethodGet, path)
	op.Responses["304"] = &huma.Response{
		Description: "The record's current ETag is one of If-None-Match's: the client's copy is current. No body.",
		Headers: map[string]*huma.Param{"ETag": {
			Description: "The record's current ETag.", Schema: &huma.Schema{Type: huma.TypeString},
		}},
	}
}

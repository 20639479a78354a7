package server

import (
	"cmp"
	"errors"
	"slices"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Credentials in the URLs of definition records are never shown. An
// evaluator's config may hold the address of a service with its
// credentials ("https://user:password@judge.example/v1"): every answer
// that carries evaluator configs (the evaluator operations, the export,
// a run's definitions) shows such a URL as harness.MaskURL writes it,
// "https://user:********@judge.example/v1", whatever its key and however
// deep. A write that sends the masked URL back unchanged (an update, an
// import of an export) keeps the stored one; a masked URL that is not
// the masked stored one (another host, port, path or user, or nothing
// stored at that place) is refused (422), and credentials sent in clear
// replace the stored ones. The definition files keep the URLs as given.
//
// Tools have no config: a tool's mock_response and function parameters
// are what the model is sent, and runs record them in their transcripts,
// so they are shown as they are.

// maskedConfig returns a copy of an evaluator config with the
// credentials of its URLs masked; nil stays nil.
func maskedConfig(cfg map[string]any) map[string]any {
	if cfg == nil {
		return nil
	}
	return harness.MaskURLs(cfg).(map[string]any)
}

// restoreConfigURLs puts the stored URLs back in place of their masked
// form in cfg (changed in place), comparing with stored (nil: nothing
// stored, so that any masked URL is an error). The errors are located
// at field and the path below it.
func restoreConfigURLs(ve *harness.ValidationError, field string, cfg, stored map[string]any) {
	if cfg == nil || !harness.HasMaskedURLs(cfg) {
		return
	}
	harness.RestoreMaskedURLs(ve, field, cfg, stored)
}

// configCredentials lists the credentials of the URLs of configs, longest
// first: what an error about them must not repeat.
func configCredentials(cfgs ...map[string]any) []string {
	var out []string
	for _, c := range cfgs {
		out = append(out, harness.URLCredentials(c)...)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// withoutCredentials returns err with the credentials removed from its
// text (harness.RedactSecrets), so that neither the problem answered nor
// the log of an unexpected error repeats them; a validation error stays
// one, with its messages and values redacted. An err that holds none is
// returned as it is.
func withoutCredentials(err error, creds []string) error {
	if err == nil || len(creds) == 0 {
		return err
	}
	var ve *harness.ValidationError
	if errors.As(err, &ve) {
		out := &harness.ValidationError{Fields: make([]harness.FieldError, len(ve.Fields))}
		for i, f := range ve.Fields {
			f.Message = harness.RedactSecrets(f.Message, creds)
			if s, ok := f.Value.(string); ok {
				f.Value = harness.RedactSecrets(s, creds)
			}
			out.Fields[i] = f
		}
		return out
	}
	msg := harness.RedactSecrets(err.Error(), creds)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose text had credentials removed; it
// matches what the original matches (errors.Is), so that it maps to the
// same status.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

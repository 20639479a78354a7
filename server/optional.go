package server

import (
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// optional is a JSON field of an update body that may be absent (keep the
// stored value), null (clear it) or a value (replace it). A plain pointer
// cannot tell the first two apart.
type optional[T any] struct {
	// Set is true when the field was present, null included.
	Set bool
	// Value is nil when the field was null.
	Value *T
}

// UnmarshalJSON records that the field was present; encoding/json calls it
// for null too.
func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// Schema documents the field as T's schema or null, so that generated
// clients can send null: a scalar, array or map schema gets the type
// "null" too, any other (a reference, or T is any) becomes anyOf [schema,
// {type: null}].
func (optional[T]) Schema(r huma.Registry) *huma.Schema {
	s := *r.Schema(reflect.TypeFor[T](), true, "")
	if s.Type == "" || s.Ref != "" {
		return nullable(&s)
	}
	s.Nullable = true
	return &s
}

// apply stores the field in dst when it was present: the value, or T's
// zero value for null.
func (o optional[T]) apply(dst *T) {
	if !o.Set {
		return
	}
	var zero T
	*dst = zero
	if o.Value != nil {
		*dst = *o.Value
	}
}

package docsui

import (
	"reflect"
	"testing"

	"github.com/danielgtaylor/huma/v2"
)

func TestParseText(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     text
	}{
		{"empty", " \n ", nil},
		{"one paragraph, its line breaks kept", "a\nb", text{{Para: []span{{Text: "a\nb"}}}}},
		{"paragraphs", "a\r\n\r\n\n\nb", text{{Para: []span{{Text: "a"}}}, {Para: []span{{Text: "b"}}}}},
		{"code", "x `y` z``", text{{Para: []span{{Text: "x "}, {Text: "y", Code: true}, {Text: " z"}}}}},
		{"unpaired backtick", "a `b", text{{Para: []span{{Text: "a `b"}}}}},
		{"list with a continued item", "- one\n  more\n* `two`", text{{Items: [][]span{{{Text: "one more"}}, {{Text: "two", Code: true}}}}}},
		{"not a list: a line without a bullet", "- one\ntwo", text{{Para: []span{{Text: "- one\ntwo"}}}}},
		{"markup stays text", "<b>x</b>", text{{Para: []span{{Text: "<b>x</b>"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseText(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseText(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	ids := &idSet{seen: map[string]bool{}}
	for _, tc := range []struct{ in, want string }{
		{"get-tree", "get-tree"},
		{"get-tree", "get-tree-2"},
		{"get-tree", "get-tree-3"},
		{"tag-Results and history", "tag-Results-and-history"},
		{`"><script>`, "script"},
		{"---", "id"},
		{"v1.2_x", "v1.2_x"},
	} {
		if got := ids.add(tc.in); got != tc.want {
			t.Errorf("add(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStatuses(t *testing.T) {
	m := map[string]*huma.Response{"default": nil, "500": nil, "2XX": nil, "201": nil, "200": nil, "404": nil}
	want := []string{"200", "201", "2XX", "404", "500", "default"}
	if got := statuses(m); !reflect.DeepEqual(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
}

func TestDescribeSecurity(t *testing.T) {
	for _, tc := range []struct {
		reqs []map[string][]string
		want string
	}{
		{nil, "none"},
		{[]map[string][]string{{}}, "none"},
		{[]map[string][]string{{"bearer": {}}}, "bearer"},
		{[]map[string][]string{{"bearer": {}}, {}}, "bearer, or none"},
		{[]map[string][]string{{"key": {}, "oauth": {"read", "write"}}, {"bearer": nil}}, "key and oauth (read, write), or bearer"},
	} {
		if got := describeSecurity(tc.reqs); got != tc.want {
			t.Errorf("describeSecurity(%v) = %q, want %q", tc.reqs, got, tc.want)
		}
	}
}

package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// A value the scanner accepts is valid JSON, and every value in the subset
// is accepted; outside it (escapes, non-ASCII, too deep) it refuses.
func TestValueIsStrictSubset(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x01"},"latest"]}`, true},
		{` [1, -0.5e+3, true, false, null, "a", {}, []] `, true},
		{`{"a":{"b":[{"c":0}]}}`, true},
		{`""`, true},
		{`0`, true},
		{`"\u0041"`, false}, // escape: valid, outside the subset
		{`"é"`, false},      // non-ASCII: valid, outside the subset
		{deep, false},
		{`[1,]`, false},
		{`{"a":1,}`, false},
		{`{"a" 1}`, false},
		{`01`, false},
		{`1.`, false},
		{`-`, false},
		{`1e`, false},
		{`tru`, false},
		{`"a`, false},
		{"\"a\nb\"", false},
		{`{1:2}`, false},
		{`[1 2]`, false},
		{`nul`, false},
	} {
		s := New([]byte(tc.in))
		_, ok := s.Value(0)
		ok = ok && s.End()
		if ok != tc.ok {
			t.Errorf("%q: accepted %v, want %v", tc.in, ok, tc.ok)
		}
		if ok && !json.Valid([]byte(tc.in)) {
			t.Errorf("%q: accepted, but not valid JSON", tc.in)
		}
	}
}

// Object gives each key's contents and Str each string with its quotes.
func TestObjectKeysAndStrings(t *testing.T) {
	s := New([]byte(`{ "a" : "x", "b":"y" }`))
	var got []string
	ok := s.Object(func(k []byte) bool {
		v, ok := s.Str()
		got = append(got, string(k)+"="+string(v))
		return ok
	}) && s.End()
	if !ok || strings.Join(got, " ") != `a="x" b="y"` {
		t.Fatalf("ok %v, got %q", ok, got)
	}
}

package conformance

import (
	"strings"
	"testing"
)

func TestShape(t *testing.T) {
	want := `{"jsonrpc":"2.0","id":1,"result":{"head":{"number":"0x36"},"logs":{"disabled":false,"deleteStrategy":{"type":"window"}},"list":[{"a":1}]}}`
	for _, tc := range []struct {
		got  string
		diff string // "" for a match, else a substring of the difference
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"head":{"number":"0x1"},"logs":{"disabled":true,"deleteStrategy":{"type":"x"},"extra":1},"list":[{"a":2},{"b":3}]}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{"head":{"number":"0x1"},"logs":{"disabled":false},"list":[]}}`, "$.result.logs.deleteStrategy missing"},
		{`{"jsonrpc":"2.0","id":1,"result":{"head":{"number":1},"logs":{"disabled":false,"deleteStrategy":{"type":"window"}},"list":[]}}`, "$.result.head.number is a number"},
		{`{"jsonrpc":"2.0","id":1,"result":{"head":{"number":"0x1"},"logs":{"disabled":false,"deleteStrategy":{"type":"window"}},"list":[{"a":"x"}]}}`, "$.result.list[0].a is a string"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, "$.result missing"},
		{`not json`, "not JSON"},
	} {
		d := Shape([]byte(want), []byte(tc.got))
		if (tc.diff == "") != (d == "") || !strings.Contains(d, tc.diff) {
			t.Errorf("Shape(%s) = %q, want %q", tc.got, d, tc.diff)
		}
	}
	if d := Shape([]byte(`{"error":{"code":1}}`), []byte(`{"result":"0x1"}`)); !strings.Contains(d, "$.result unexpected") {
		t.Errorf("result for an error: %q", d)
	}
}

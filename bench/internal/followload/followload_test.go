package followload

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestOptions: the rates parse in order; bad rates and senders that do not
// divide among the connections are refused.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		args  string
		rates []float64
		ok    bool
	}{
		{"", []float64{2, 5, 10, 25, 50, 100}, true},
		{"-followdefi-rates 10,100.5", []float64{10, 100.5}, true},
		{"-followdefi-rates 10,x", nil, false},
		{"-followdefi-rates 0", nil, false},
		{"-followdefi-senders 100 -followdefi-conns 32", nil, false},
		{"-followdefi-step 0s", nil, false},
		{"-followdefi-proofs off", []float64{2, 5, 10, 25, 50, 100}, true},
		{"-followdefi-proofs none", nil, false},
	} {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(strings.Fields(tc.args)); err != nil {
			t.Fatal(err)
		}
		err := o.finish()
		if (err == nil) != tc.ok {
			t.Fatalf("%q: err %v, want ok %v", tc.args, err, tc.ok)
		}
		if tc.ok && !slices.Equal(o.Rates, tc.rates) {
			t.Fatalf("%q: rates %v, want %v", tc.args, o.Rates, tc.rates)
		}
	}
}

// TestMarkdown names the highest sustained rate, or says none was.
func TestMarkdown(t *testing.T) {
	r := &Report{Options: Options{Step: 1e9}, ChainsMgas: chainsHighestMgas, Steps: []Step{{Mgas: 50, Sustained: true}, {Mgas: 100}}, Highest: 50}
	if md := r.Markdown(); !strings.Contains(md, "**50 Mgas/s**, 1.00×") || strings.Count(md, "\n| ") != 3 {
		t.Fatalf("markdown:\n%s", md)
	}
	r.Highest = 0
	if md := r.Markdown(); !strings.Contains(md, "No rate was sustained") {
		t.Fatalf("markdown:\n%s", md)
	}
}

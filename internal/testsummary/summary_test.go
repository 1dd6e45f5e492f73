package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// run feeds lines to a summary and returns what the terminal and the log got.
func run(t *testing.T, input string) (term, log string, s *summary) {
	t.Helper()
	var tb, lb bytes.Buffer
	s = newSummary(&tb, &lb)
	for l := range strings.SplitSeq(strings.TrimRight(input, "\n"), "\n") {
		s.line([]byte(l))
	}
	s.end()
	return tb.String(), lb.String(), s
}

// testdata/run.json is `go test -json ./...` of four small packages: one
// that passes with two skips (one a subtest), one with a failing subtest,
// one without tests, one that does not build.
func TestSummaryOfARun(t *testing.T) {
	data, err := os.ReadFile("testdata/run.json")
	if err != nil {
		t.Fatal(err)
	}
	term, log, s := run(t, string(data))
	if !s.failed {
		t.Error("a run with a failed test and a failed build is not a failure")
	}
	for _, want := range []string{
		"broken/x.go:3:12: undefined: undefined\n", // the build's error
		"    bad_test.go:8: before\n",              // the failed test's whole output
		"    bad_test.go:9: got 1, want 2\n        second line\n",
		"--- FAIL: TestFails (0.00s)\n",
		"FAIL\tgithub.com/preconf/preconf/bad\t",
		"FAIL\tgithub.com/preconf/preconf/broken [build failed]\n",
		"ok  \tgithub.com/preconf/preconf/good\t",
		"?   \tgithub.com/preconf/preconf/notests\t[no test files]\n",
	} {
		if !strings.Contains(term, want) {
			t.Errorf("terminal lacks %q:\n%s", want, term)
		}
	}
	for _, not := range []string{"=== RUN", "quiet when it passes", "bad_test.go:5: fine", "--- PASS"} {
		if strings.Contains(term, not) {
			t.Errorf("terminal shows %q, which a plain go test does not:\n%s", not, term)
		}
	}
	for _, want := range []string{"=== RUN   TestPass\n", "    good_test.go:5: quiet when it passes\n", "--- FAIL: TestFails (0.00s)\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	lines := strings.Split(strings.TrimRight(term, "\n"), "\n")
	want := "skipped: 2 tests: good.TestSkip (geth not installed: run go run ./internal/peers/install geth); " +
		"good.TestTable/needs-cast (cast not installed: run scripts/setup-clients)"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line\n%s\nwant\n%s", last, want)
	}
}

func TestSummaryCases(t *testing.T) {
	const pkg = `"Package":"github.com/preconf/preconf/p"`
	for _, tc := range []struct {
		name, input string
		failed      bool
		want        []string // in the terminal
		not         []string // not in the terminal
		last        string
	}{{
		name: "all pass",
		input: `{"Action":"run",` + pkg + `,"Test":"TestA"}
{"Action":"output",` + pkg + `,"Test":"TestA","Output":"    a_test.go:3: hello\n"}
{"Action":"pass",` + pkg + `,"Test":"TestA"}
{"Action":"output",` + pkg + `,"Output":"PASS\n"}
{"Action":"output",` + pkg + `,"Output":"ok  \tgithub.com/preconf/preconf/p\t0.1s\n"}
{"Action":"pass",` + pkg + `}`,
		want: []string{"ok  \tgithub.com/preconf/preconf/p\t0.1s\n"},
		last: "skipped: none",
	}, {
		// A timeout: the running test gets no end event, the package fails;
		// what the test printed is shown, then the panic.
		name: "a test that never ends",
		input: `go: downloading example.com/m v1.0.0
{"Action":"run",` + pkg + `,"Test":"TestHang"}
{"Action":"output",` + pkg + `,"Test":"TestHang","Output":"    a_test.go:9: waiting for the seal\n"}
{"Action":"output",` + pkg + `,"Output":"panic: test timed out after 40m0s\n"}
{"Action":"output",` + pkg + `,"Output":"FAIL\tgithub.com/preconf/preconf/p\t2400.0s\n"}
{"Action":"fail",` + pkg + `}`,
		failed: true,
		want:   []string{"go: downloading example.com/m v1.0.0\n", "    a_test.go:9: waiting for the seal\npanic: test timed out after 40m0s\nFAIL\t"},
		last:   "skipped: none",
	}, {
		// As a plain go test: a failed test with its failed subtest, not
		// the subtests that passed.
		name: "a failed test with a passing subtest",
		input: `{"Action":"run",` + pkg + `,"Test":"TestT"}
{"Action":"output",` + pkg + `,"Test":"TestT","Output":"=== RUN   TestT\n"}
{"Action":"output",` + pkg + `,"Test":"TestT/good","Output":"    a_test.go:4: all fine\n"}
{"Action":"output",` + pkg + `,"Test":"TestT/good","Output":"    --- PASS: TestT/good (0.00s)\n"}
{"Action":"pass",` + pkg + `,"Test":"TestT/good"}
{"Action":"output",` + pkg + `,"Test":"TestT/bad","Output":"    a_test.go:5: got 1\n"}
{"Action":"output",` + pkg + `,"Test":"TestT/bad","Output":"    --- FAIL: TestT/bad (0.00s)\n"}
{"Action":"fail",` + pkg + `,"Test":"TestT/bad"}
{"Action":"output",` + pkg + `,"Test":"TestT","Output":"--- FAIL: TestT (0.00s)\n"}
{"Action":"fail",` + pkg + `,"Test":"TestT"}
{"Action":"output",` + pkg + `,"Output":"FAIL\n"}
{"Action":"output",` + pkg + `,"Output":"FAIL\tgithub.com/preconf/preconf/p\t0.1s\n"}
{"Action":"fail",` + pkg + `}`,
		failed: true,
		want:   []string{"    a_test.go:5: got 1\n    --- FAIL: TestT/bad (0.00s)\n--- FAIL: TestT (0.00s)\nFAIL\nFAIL\tgithub.com/preconf/preconf/p\t0.1s\n"},
		not:    []string{"all fine", "--- PASS", "=== RUN"},
		last:   "skipped: none",
	}, {
		name: "a skip without a message",
		input: `{"Action":"run",` + pkg + `,"Test":"TestS"}
{"Action":"skip",` + pkg + `,"Test":"TestS"}
{"Action":"pass",` + pkg + `}`,
		last: "skipped: 1 test: p.TestS",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			term, _, s := run(t, tc.input)
			if s.failed != tc.failed {
				t.Errorf("failed = %v, want %v", s.failed, tc.failed)
			}
			for _, w := range tc.want {
				if !strings.Contains(term, w) {
					t.Errorf("terminal lacks %q:\n%s", w, term)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(term, n) {
					t.Errorf("terminal shows %q:\n%s", n, term)
				}
			}
			lines := strings.Split(strings.TrimRight(term, "\n"), "\n")
			if last := lines[len(lines)-1]; last != tc.last {
				t.Errorf("last line %q, want %q", last, tc.last)
			}
		})
	}
}

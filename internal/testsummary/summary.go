package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// module is trimmed from package paths in the skip line.
const module = "github.com/preconf/preconf/"

// event is one line of `go test -json` (go doc cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

type skipped struct{ test, reason string }

// summary turns the events into the terminal's text, the log and the skip
// line. Output is kept per test until the test ends: a failed top-level
// test's is printed with that of its failed subtests, the rest dropped.
type summary struct {
	term, log io.Writer
	tests     map[key][]string    // output of running tests (a failed subtest's in its parent's)
	pkgOut    map[string][]string // a package's own output (ok/FAIL lines, TestMain, panics)
	last      map[key]string      // each test's last logged message: a skip's reason
	skips     []skipped
	failed    bool
}

func newSummary(term, log io.Writer) *summary {
	return &summary{term: term, log: log, tests: make(map[key][]string), pkgOut: make(map[string][]string), last: make(map[key]string)}
}

// logged matches a test's log line, "    file_test.go:12: message".
var logged = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: (.*)$`)

func (s *summary) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		fmt.Fprintf(s.term, "%s\n", b) // the go command's own lines
		fmt.Fprintf(s.log, "%s\n", b)
		return
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		io.WriteString(s.log, e.Output)
		s.tests[k] = append(s.tests[k], e.Output)
		if m := logged.FindStringSubmatch(strings.TrimRight(e.Output, "\n")); m != nil {
			s.last[k] = m[1]
		}
	case "skip":
		s.skips = append(s.skips, skipped{strings.TrimPrefix(e.Package, module) + "." + e.Test, s.last[k]})
		fallthrough
	case "pass":
		delete(s.last, k)
		delete(s.tests, k)
	case "fail":
		s.failed = true
		delete(s.last, k)
		// A failed subtest's output goes with its parent's, printed when
		// the top-level test ends; a passed one's is dropped.
		if i := strings.LastIndexByte(e.Test, '/'); i >= 0 {
			parent := key{e.Package, e.Test[:i]}
			s.tests[parent] = append(s.tests[parent], s.tests[k]...)
		} else {
			s.print(s.tests[k])
		}
		delete(s.tests, k)
	}
}

// packageEvent handles what concerns a package as a whole: its own output,
// the build's output, and its end.
func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "build-output":
		io.WriteString(s.term, e.Output)
		io.WriteString(s.log, e.Output)
	case "build-fail":
		s.failed = true
	case "output":
		io.WriteString(s.log, e.Output)
		s.pkgOut[e.Package] = append(s.pkgOut[e.Package], e.Output)
	case "pass", "skip": // skip: no test files
		for _, l := range s.pkgOut[e.Package] {
			if strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "?") {
				io.WriteString(s.term, l)
			}
		}
		delete(s.pkgOut, e.Package)
	case "fail":
		s.failed = true
		// Tests that never ended (a panic, a timeout) first, in name
		// order (a parent before its subtests), then the package's own
		// lines.
		var running []key
		for k := range s.tests {
			if k.pkg == e.Package {
				running = append(running, k)
			}
		}
		slices.SortFunc(running, func(a, b key) int { return strings.Compare(a.test, b.test) })
		for _, k := range running {
			s.print(s.tests[k])
			delete(s.tests, k)
		}
		s.print(s.pkgOut[e.Package])
		delete(s.pkgOut, e.Package)
	}
}

// print writes output as a plain `go test` shows it: without the
// verbose mode's === lines.
func (s *summary) print(out []string) {
	for _, l := range out {
		if !strings.HasPrefix(l, "=== ") && l != "PASS\n" {
			io.WriteString(s.term, l)
		}
	}
}

// end writes the skip line.
func (s *summary) end() {
	if len(s.skips) == 0 {
		fmt.Fprintln(s.term, "skipped: none")
		return
	}
	parts := make([]string, len(s.skips))
	for i, sk := range s.skips {
		parts[i] = sk.test
		if sk.reason != "" {
			parts[i] += " (" + sk.reason + ")"
		}
	}
	noun := "tests"
	if len(s.skips) == 1 {
		noun = "test"
	}
	fmt.Fprintf(s.term, "skipped: %d %s: %s\n", len(s.skips), noun, strings.Join(parts, "; "))
}

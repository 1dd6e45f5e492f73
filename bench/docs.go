package main

// One command for every table in docs/bench.md (and the ratios the README
// quotes):
//
//	go run ./bench -all -write-docs
//
// -all runs, in one process and one after the other, the peer comparison,
// -writeload (with its search), -follow and -bigstate, each with its own
// flags; -write-docs replaces the generated sections of docs/bench.md and
// README.md — the text between <!-- bench:NAME begin --> and
// <!-- bench:NAME end --> — with what this run measured. A part that fails
// leaves its section as it was and makes the exit status non-zero.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

var (
	allParts  bool
	writeDocs bool
)

func addDocsFlags(fs *flag.FlagSet) {
	fs.BoolVar(&allParts, "all", false, "run every part in one run: the peer comparison, -writeload (with -writeload-search; and on the OP-stack chain), -preconf-latency on the OP-stack chain, -follow and -bigstate")
	fs.BoolVar(&writeDocs, "write-docs", false, "replace the generated sections of docs/bench.md and README.md with this run's tables")
}

// docSection is one generated section.
type docSection struct {
	file, name, md string
}

// runAll is -all; the result is the exit code.
func runAll(o options, args []string, stdout, log io.Writer) int {
	start := time.Now()
	var sections []docSection
	var failed []string
	fail := func(part string, err error) {
		failed = append(failed, part)
		fmt.Fprintf(log, "bench: %s: %v\n", part, err)
	}

	// The peer comparison twice: every node sharing every CPU with the load
	// generator, then preconf and anvil with the generator on its own CPUs
	// (pin.go).
	var readme []string
	for _, pin := range []bool{false, true} {
		po, name, title := o, "main", "peer comparison"
		if pin {
			po.Pin, po.Nodes, name, title = true, pinnedNodes(o.Nodes), "pinned", "peer comparison, pinned"
		}
		fmt.Fprintln(log, "== "+title)
		rep, err := benchmark(po, log)
		if err == nil && rep != nil && len(rep.Errors) > 0 {
			err = fmt.Errorf("%d error(s): %s", len(rep.Errors), strings.Join(rep.Errors, "; "))
		}
		if err == nil && rep != nil {
			md := rep.markdown()
			err = rep.write(po.Out, md)
			fmt.Fprint(stdout, md)
			sections = append(sections, docSection{"docs/bench.md", name, md})
			readme = append(readme, rep.readmeRatios())
		}
		if err != nil {
			fail(title, err)
		}
	}
	if len(readme) == 2 {
		sections = append(sections, docSection{"README.md", "readme", strings.Join(readme, "\n")})
	}

	writeloadOpts.Search = true
	for _, part := range []struct {
		name, title string
		run         func() (rep any, md string, err error)
	}{
		{"writeload", "reads while writing", func() (any, string, error) {
			rep, err := measureWriteload(o, log)
			if err != nil {
				return nil, "", err
			}
			return rep, rep.markdown(), nil
		}},
		// The same 60 s window on the OP-stack dev chain, preconf's
		// default (no search: the window's verdict is what differs).
		{"writeload-op", "reads while writing, OP-stack dev chain", func() (any, string, error) {
			saved := writeloadOpts
			defer func() { writeloadOpts = saved }()
			writeloadOpts.Chain, writeloadOpts.Search = "op", false
			rep, err := measureWriteload(o, log)
			if err != nil {
				return nil, "", err
			}
			return rep, rep.markdown(), nil
		}},
		// Send → visible on the OP-stack dev chain, preconf's default
		// (its flashblock schedule: sequencer/schedule.go).
		{"latency-op", "pre-confirmation latency, OP-stack dev chain", func() (any, string, error) {
			saved := latencyOpts
			defer func() { latencyOpts = saved }()
			latencyOpts.Chain = "op"
			rep, err := measureLatency(o, log)
			if err != nil {
				return nil, "", err
			}
			return rep, rep.markdown(), nil
		}},
		{"follow", "follow mode", func() (any, string, error) {
			rep, err := measureFollow(o, log)
			if err != nil {
				return nil, "", err
			}
			return rep, rep.markdown(), nil
		}},
		{"bigstate", "big state", bigstatePart(o, log, false)},
		{"bigstate-pinned", "big state, pinned", bigstatePart(o, log, true)},
	} {
		fmt.Fprintln(log, "== "+part.title)
		rep, md, err := part.run()
		if err != nil {
			fail(part.name, err)
			continue
		}
		writeSideReport(o, stdout, log, part.name, rep, md)
		sections = append(sections, docSection{"docs/bench.md", part.name, md})
	}

	took := time.Since(start)
	fmt.Fprintf(log, "all parts: %s\n", took.Round(time.Second))
	if writeDocs {
		if err := updateDocs(sections, args, start, took); err != nil {
			fail("write-docs", err)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(log, "bench: failed: %s\n", strings.Join(failed, ", "))
		return 1
	}
	return 0
}

// bigstatePart is the -bigstate part of -all, shared or pinned.
func bigstatePart(o options, log io.Writer, pin bool) func() (any, string, error) {
	return func() (any, string, error) {
		o.Pin = pin
		rep, err := measureBigstate(o, log)
		if err == nil && len(rep.Errors) > 0 {
			err = fmt.Errorf("%d error(s): %s", len(rep.Errors), strings.Join(rep.Errors, "; "))
		}
		if err != nil {
			return nil, "", err
		}
		return rep, rep.markdown(), nil
	}
}

// pinnedNodes are the nodes of the pinned comparison: preconf and anvil,
// the peer whose tails issue 15 compares (geth's are far behind either way).
func pinnedNodes(nodes []string) []string {
	return slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n != "preconf" && n != "anvil" })
}

// updateDocs writes the sections into their files, each under a line that
// says when and how it was measured.
func updateDocs(sections []docSection, args []string, start time.Time, took time.Duration) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	cmd := "go run ./bench " + strings.Join(args, " ")
	stamp := fmt.Sprintf("_Generated by `%s` (started %s, all parts %s; %s)._\n\n",
		strings.TrimSpace(cmd), start.UTC().Format("2006-01-02 15:04 UTC"), took.Round(time.Second), loadAverage())
	var errs []error
	for _, s := range sections {
		path := filepath.Join(repo, s.file)
		raw, err := os.ReadFile(path)
		if err == nil {
			var out string
			if out, err = replaceSection(string(raw), s.name, stamp+demote(s.md)); err == nil {
				err = os.WriteFile(path, []byte(out), 0o644)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.file, err))
			continue
		}
		fmt.Fprintf(os.Stderr, "wrote section %q of %s\n", s.name, s.file)
	}
	return errors.Join(errs...)
}

// replaceSection replaces the text between the section's markers.
func replaceSection(doc, name, body string) (string, error) {
	begin, end := "<!-- bench:"+name+" begin -->", "<!-- bench:"+name+" end -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s … %s markers", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + strings.TrimSpace(body) + "\n" + doc[j:], nil
}

// demote makes a part's "## " headings "### ": its section sits under the
// page's own heading.
func demote(md string) string {
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			lines[i] = "#" + l
		}
	}
	return strings.Join(lines, "\n")
}

// loadAverage is the machine's load average, for the record.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average at the end " + strings.Join(f[:3], " ")
}

// readmeRatios is the README's summary: each workload's ratios to the peers.
func (r *report) readmeRatios() string {
	var b strings.Builder
	layout := "generator and nodes sharing every CPU"
	if r.Layout != "" {
		layout = r.Layout
	}
	fmt.Fprintf(&b, "Latest same-run ratios (%s, %d rounds, %s; req/s of preconf ÷ peer, p99 of preconf ÷ peer (< 1: preconf's lower), "+
		"and the same for the node's part of the p99, send → answer in the client's socket; tables in docs/bench.md):\n\n", r.Started.Format("2006-01-02"), r.Options.Rounds, layout)
	peers := r.Nodes[1:]
	b.WriteString("| workload |")
	for _, p := range peers {
		fmt.Fprintf(&b, " vs %s | p99 vs %s | node's p99 vs %s |", p, p, p)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|---:|---:|", len(peers)) + "\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s |", s.Workload)
		for _, p := range peers {
			for _, m := range []map[string]float64{s.Ratio, s.P99Ratio, s.SockP99Ratio} {
				if v, ok := m[p]; ok {
					fmt.Fprintf(&b, " %.2f× |", v)
				} else {
					b.WriteString(" — |")
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

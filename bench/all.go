package main

// One command for every table in docs/bench.md (and the ratios the README
// quotes):
//
//	go run ./bench all -write-docs
//
// all runs, in one process and one after the other, the peer comparison
// (shared, then pinned), writeload (with its search; and on the OP-stack
// chain), latency on the OP-stack chain, follow, follow at a DeFi load, the suite loop, tails by two
// harnesses and bigstate
// (shared, then pinned), each with its own flags; -write-docs replaces the generated
// sections of docs/bench.md and README.md — the text between
// <!-- bench:NAME begin --> and <!-- bench:NAME end --> — with what this run
// measured. A part that fails leaves its section as it was and makes the
// exit status non-zero.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/bigstate"
	"github.com/preconf/preconf/bench/internal/compare"
	"github.com/preconf/preconf/bench/internal/follow"
	"github.com/preconf/preconf/bench/internal/followload"
	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/latency"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/suite"
	"github.com/preconf/preconf/bench/internal/tails"
	"github.com/preconf/preconf/bench/internal/writeload"
)

// allOptions are each experiment's flags as given to all.
type allOptions struct {
	compare    compare.Options
	writeload  writeload.Options
	latency    latency.Options
	follow     follow.Options
	followDeFi followload.Options
	bigstate   bigstate.Options
	suite      suite.Options
	tails      tails.Options
}

// runAll runs every part; a part that fails carries its error.
func runAll(h harness.Options, o allOptions, log io.Writer) []part {
	start := time.Now()
	var parts []part
	add := func(name string, ps []part, err error) {
		if err != nil && len(ps) == 0 {
			ps = []part{{name: name}}
		}
		if err != nil {
			ps[0].err = err
		}
		parts = append(parts, ps...)
	}

	// The peer comparison twice: every node sharing every CPU with the load
	// generator, then preconf and anvil with the generator on its own CPUs
	// (harness/pin.go). The README quotes both, so its section is written
	// only when both succeeded.
	var readme []string
	for _, pin := range []bool{false, true} {
		ph, name, title := h, "main", "peer comparison"
		if pin {
			ph.Pin, ph.Nodes, name, title = true, pinnedNodes(h.Nodes), "pinned", "peer comparison, pinned"
		}
		fmt.Fprintln(log, "== "+title)
		ps, err := comparePart(ph, o.compare, name, log)
		if err == nil && len(ps) == 1 && ps[0].err == nil {
			readme = append(readme, ps[0].sections[1].MD)
		}
		for i := range ps {
			ps[i].name = title
			ps[i].sections = ps[i].sections[:1]
		}
		add(title, ps, err)
	}
	if len(readme) == 2 {
		parts = append(parts, part{name: "readme", sections: []report.Section{{File: "README.md", Name: "readme", MD: strings.Join(readme, "\n")}}})
	}

	wo := o.writeload
	wo.Search = true
	// The same 60 s window on the OP-stack dev chain, preconf's default
	// (no search: the window's verdict is what differs).
	woOP := o.writeload
	woOP.Chain, woOP.Search = "op", false
	for _, w := range []struct {
		title string
		o     writeload.Options
	}{{"reads while writing", wo}, {"reads while writing, OP-stack dev chain", woOP}} {
		fmt.Fprintln(log, "== "+w.title)
		rep, err := writeload.Run(h, w.o, log)
		if err != nil {
			add(w.o.Section(), nil, err)
			continue
		}
		add("", []part{side(w.o.Section(), rep, rep.Markdown(), w.o.Section())}, nil)
	}

	// Send → visible on the OP-stack dev chain, preconf's default (its
	// flashblock schedule: sequencer/schedule.go).
	fmt.Fprintln(log, "== pre-confirmation latency, OP-stack dev chain")
	lo := o.latency
	lo.Chain = "op"
	if rep, err := latency.Run(h, lo, log); err != nil {
		add("latency-op", nil, err)
	} else {
		add("", []part{side("latency-op", rep, rep.Markdown(), "latency-op")}, nil)
	}

	fmt.Fprintln(log, "== follow mode")
	if rep, err := follow.Run(h, o.follow, log); err != nil {
		add("follow", nil, err)
	} else {
		add("", []part{side("follow", rep, rep.Markdown(), "follow")}, nil)
	}

	fmt.Fprintln(log, "== a follower at a DeFi load")
	if rep, err := followload.Run(h, o.followDeFi, log); err != nil {
		add("follow-defi", nil, err)
	} else {
		add("", []part{side("follow-defi", rep, rep.Markdown(), "follow-defi")}, nil)
	}

	fmt.Fprintln(log, "== a test suite's loop (viem, automine)")
	if rep, err := suite.Run(h, o.suite, log); err != nil {
		add("suite", nil, err)
	} else {
		add("", []part{side("suite", rep, rep.Markdown(), "suite")}, nil)
	}

	fmt.Fprintln(log, "== tails by two harnesses (the bench's generator and wrk)")
	if rep, err := tails.Run(h, o.tails, compare.Select(strings.Split(o.tails.Workloads, ",")), log); err != nil {
		add("tails", nil, err)
	} else {
		add("", []part{side("tails", rep, rep.Markdown(), "tails")}, nil)
	}

	for _, pin := range []bool{false, true} {
		bh, name, title := h, "bigstate", "big state"
		if pin {
			bh.Pin, name, title = true, "bigstate-pinned", "big state, pinned"
		}
		fmt.Fprintln(log, "== "+title)
		parts = append(parts, bigstatePart(bh, o.bigstate, name, log))
	}

	fmt.Fprintf(log, "all parts: %s\n", time.Since(start).Round(time.Second))
	var failed []string
	for _, p := range parts {
		if p.err != nil {
			failed = append(failed, p.name)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(log, "bench: failed: %s\n", strings.Join(failed, ", "))
	}
	return parts
}

// pinnedNodes are the nodes of the pinned comparison: preconf and anvil,
// the peer whose tails issue 15 compares (geth's are far behind either way).
func pinnedNodes(nodes []string) []string {
	return slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n != "preconf" && n != "anvil" })
}

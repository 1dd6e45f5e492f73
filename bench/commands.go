package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/preconf/preconf/bench/internal/bigstate"
	"github.com/preconf/preconf/bench/internal/compare"
	"github.com/preconf/preconf/bench/internal/follow"
	"github.com/preconf/preconf/bench/internal/followload"
	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/latency"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/shape"
	"github.com/preconf/preconf/bench/internal/suite"
	"github.com/preconf/preconf/bench/internal/tails"
	"github.com/preconf/preconf/bench/internal/writeload"
	"github.com/preconf/preconf/internal/peers"
)

// command is one sub-command: an experiment with its own flags, or a tool.
type command struct {
	name, help string
	// bare commands take none of the shared flags.
	bare  bool
	flags func(fs *flag.FlagSet)
	// run measures; each part is printed, kept in -out and, with
	// -write-docs, written into its sections.
	run func(h harness.Options, log io.Writer) ([]part, error)
	// exec, instead of run, does the whole command (its exit code).
	exec func(h harness.Options, args []string, stdout, stderr io.Writer) int
}

// part is one measured result.
type part struct {
	name string
	// save prints the result and keeps it (JSON and Markdown) in out.
	save     func(out string, stdout, log io.Writer) error
	sections []report.Section
	err      error // the part failed: its sections are not written
}

// side is a part kept as <name>.json/.md in -out.
func side(name string, rep any, md string, sections ...string) part {
	p := part{name: name, save: func(out string, stdout, log io.Writer) error {
		report.WriteSide(out, stdout, log, name, rep, md)
		return nil
	}}
	for _, s := range sections {
		p.sections = append(p.sections, report.Section{File: "docs/bench.md", Name: s, MD: md})
	}
	return p
}

// commands are the sub-commands; each experiment's options live here once,
// so that `all` runs every experiment with the flags given to it.
func commands() []*command {
	var (
		co compare.Options
		wo writeload.Options
		lo latency.Options
		fo follow.Options
		do followload.Options
		bo bigstate.Options
		so shape.Options
		uo suite.Options
		to tails.Options
	)
	cmds := []*command{
		{name: "compare", help: "the peer comparison: reads and eth_simulateV1 bundles at 32 connections, preconf vs anvil and geth (default)",
			flags: co.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				if !h.Pin {
					return comparePart(h, co, "main", log)
				}
				// Pinned, its own section; the README quotes both runs
				// (all writes it), so a pinned run alone leaves it.
				ps, err := comparePart(h, co, "pinned", log)
				for i := range ps {
					ps[i].sections = ps[i].sections[:1]
				}
				return ps, err
			}},
		{name: "writeload", help: "reads while writing: sustained transfers/s to the sequencer while pending reads run",
			flags: wo.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				rep, err := writeload.Run(h, wo, log)
				if err != nil {
					return nil, err
				}
				return []part{side(wo.Section(), rep, rep.Markdown(), wo.Section())}, nil
			}},
		{name: "latency", help: "pre-confirmation latency: send → visible at pending, and sustained pre-confirmations under reads",
			flags: lo.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				rep, err := latency.Run(h, lo, log)
				if err != nil {
					return nil, err
				}
				if lo.Chain == "op" {
					return []part{side("latency-op", rep, rep.Markdown(), "latency-op")}, nil
				}
				return []part{side("preconf-latency", rep, rep.Markdown())}, nil
			}},
		{name: "follow", help: "follow mode: flashblock → visible on a follower, follower vs sequencer pending reads",
			flags: fo.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				rep, err := follow.Run(h, fo, log)
				if err != nil {
					return nil, err
				}
				return []part{side("follow", rep, rep.Markdown(), "follow")}, nil
			}},
		{name: "follow-defi", help: "a follower at a DeFi load: rising gas rates, upstream 1 ms away; received → visible, flashblocks missed, upstream requests per flashblock",
			flags: do.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				rep, err := followload.Run(h, do, log)
				if err != nil {
					return nil, err
				}
				return []part{side("follow-defi", rep, rep.Markdown(), "follow-defi")}, nil
			}},
		{name: "bigstate", help: "a big state: a million accounts, random-key reads, start-up, RSS and disk",
			flags: bo.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				return []part{bigstatePart(h, bo, "bigstate", log)}, nil
			}},
		{name: "suite", help: "a test suite's loop through viem on preconf --automine and anvil: deploy, writes awaited to receipts, reads, snapshot/revert cycles",
			flags: uo.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				rep, err := suite.Run(h, uo, log)
				if err != nil {
					return nil, err
				}
				return []part{side("suite", rep, rep.Markdown(), "suite")}, nil
			}},
		{name: "tails", help: "p99 of the same nodes by two harnesses: the bench's generator and Debian's wrk",
			flags: to.AddFlags, run: func(h harness.Options, log io.Writer) ([]part, error) {
				wls := compare.Select(strings.Split(to.Workloads, ","))
				if len(wls) == 0 {
					return nil, fmt.Errorf("no workload matches -tails-workloads %q", to.Workloads)
				}
				rep, err := tails.Run(h, to, wls, log)
				if err != nil {
					return nil, err
				}
				return []part{side("tails", rep, rep.Markdown(), "tails")}, nil
			}},
		{name: "shape", help: "the latency shape of a minimal Go server under the same load (no node)",
			flags: so.AddFlags, exec: func(h harness.Options, _ []string, stdout, stderr io.Writer) int {
				return shape.Run(h, so, stdout, stderr)
			}},
		{name: "list", help: "list the comparison's workloads", bare: true,
			exec: func(_ harness.Options, _ []string, _, stderr io.Writer) int {
				for _, n := range compare.Names() {
					fmt.Fprintln(stderr, n)
				}
				return 0
			}},
		{name: "install", help: "install peers (anvil, geth, op-geth; comma separated) and print their paths", exec: install},
	}
	all := &command{name: "all", help: "every part in one run (compare shared and pinned, writeload, latency, follow, follow-defi, suite, tails, bigstate); -write-docs rewrites every table"}
	all.flags = func(fs *flag.FlagSet) {
		for _, c := range cmds {
			if c.flags != nil && c.name != "shape" {
				c.flags(fs)
			}
		}
	}
	all.run = func(h harness.Options, log io.Writer) ([]part, error) {
		return runAll(h, allOptions{co, wo, lo, fo, do, bo, uo, to}, log), nil
	}
	return append(cmds, all)
}

// comparePart runs the peer comparison; its sections are name (docs/bench.md)
// and the README's ratios.
func comparePart(h harness.Options, co compare.Options, name string, log io.Writer) ([]part, error) {
	co.Options = h
	co.Finish()
	rep, err := compare.Run(co, log)
	if rep == nil {
		return nil, err
	}
	md := rep.Markdown()
	p := part{name: "peer comparison", save: func(out string, stdout, log io.Writer) error {
		fmt.Fprint(stdout, md)
		if err := rep.Write(out, md); err != nil {
			return err
		}
		fmt.Fprintf(log, "results: %s/latest.json, %s/latest.md\n", out, out)
		return nil
	}, sections: []report.Section{{File: "docs/bench.md", Name: name, MD: md}, {File: "README.md", Name: "readme", MD: rep.ReadmeRatios()}}}
	if len(rep.Errors) > 0 {
		p.err = fmt.Errorf("%d error(s):\n  %s", len(rep.Errors), strings.Join(rep.Errors, "\n  "))
	}
	if err != nil {
		p.err = err
	}
	return []part{p}, nil
}

// bigstatePart runs -bigstate into section name; a generate-only run writes
// no section.
func bigstatePart(h harness.Options, bo bigstate.Options, name string, log io.Writer) part {
	rep, err := bigstate.Run(h, bo, log)
	if err != nil {
		return part{name: name, err: err}
	}
	var p part
	if bo.GenerateOnly {
		p = side(name, rep, rep.Markdown())
	} else {
		p = side(name, rep, rep.Markdown(), name)
	}
	if len(rep.Errors) > 0 {
		p.err = fmt.Errorf("%d error(s):\n  %s", len(rep.Errors), strings.Join(rep.Errors, "\n  "))
	}
	return p
}

// install installs the named peers and prints their paths:
//
//	PRECONF_OPGETH=$(go run ./bench install op-geth) go test -run OpGeth ./api/
func install(o harness.Options, args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, a := range args {
		for _, n := range strings.Split(a, ",") {
			if n = strings.TrimSpace(n); n != "op-geth" && (n == "preconf" || n == "preconf-base" || harness.Kinds[n].Install == nil) {
				fmt.Fprintf(stderr, "bench: install: unknown peer %q (anvil, geth, op-geth)\n", n)
				return 2
			}
			names = append(names, n)
		}
	}
	repo, err := harness.RepoRoot()
	if err == nil {
		err = os.MkdirAll(o.Cache, 0o755)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	e := &harness.Env{Repo: repo, Cache: o.Cache, Install: !o.NoInstall, Log: stderr}
	for _, name := range names {
		var bin string
		if name == "op-geth" {
			bin, err = harness.WithHint(peers.OpGeth(e.Repo, e.Cache, e.Install, e.Log))
		} else {
			bin, err = harness.Kinds[name].Install(e)
		}
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(stdout, bin)
	}
	return 0
}

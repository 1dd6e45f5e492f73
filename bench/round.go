package main

import (
	"fmt"
	"path/filepath"
	"slices"
)

// measureRound starts every node of the round, measures each workload on
// them in an A B C C B A sequence of half-length windows, and stops them.
//
// Why: this machine's speed drifts in spells of one to twenty seconds,
// the whole machine's at once (two preconf processes in alternating 1 s
// windows change speed together), and they do not move every program
// alike (anvil's simulation slows by ~35 % in a slow spell, preconf's by
// ~22 %; docs/bench.md). Nodes measured whole one after another (25–40 s
// each) fell in different spells; measured back to back per workload (3 s
// each, until 2026-11-27 13:30) a spell that changed between the two
// windows still moved a round's ratio by more than 10 %. In A B C C B A
// every node's two windows are centred on the same instant, so a drift
// over the sequence weighs on each node alike. Idle nodes wait at under
// 1 % of a core.
func measureRound(e *env, o options, rep *report, order []string, bins map[string]string, round int, wls []workload) {
	running := map[string]*runningNode{}
	defer func() {
		for _, n := range running {
			n.stop()
		}
	}()
	for _, name := range order {
		n, err := startNode(e, nodeKinds[name], bins[name], round)
		if err != nil {
			rep.fail(name, round, err)
			fmt.Fprintf(e.log, "  %s: %v\n", name, err)
			continue
		}
		running[name] = n
		rep.version(name, n.version())
	}
	failed := map[string]bool{}
	for _, w := range wls {
		m := &workloadRun{e: e, o: o, rep: rep, round: round, w: w, failed: failed,
			windows: map[string][]window{}, rt0: map[string]map[string]float64{}, skip: map[string]bool{}}
		seq := append(slices.Clone(order), reversed(order)...)
		for i, name := range seq {
			if n := running[name]; n != nil && !failed[name] && !m.skip[name] {
				m.window(n, i < len(order))
			}
		}
		for _, name := range order {
			if n := running[name]; n != nil && !failed[name] && !m.skip[name] {
				m.record(n)
			}
		}
	}
}

// workloadRun is one workload's sequence of windows in a round.
type workloadRun struct {
	e       *env
	o       options
	rep     *report
	round   int
	w       workload
	failed  map[string]bool // the node failed: no further workloads this round
	skip    map[string]bool // its answer was wrong: recorded as failed for this workload
	windows map[string][]window
	rt0     map[string]map[string]float64 // runtime metrics before a node's first window
}

// window measures one half-length window on n (the first of its two: the
// answer is checked first). A load error fails the node for the round.
func (m *workloadRun) window(n *runningNode, first bool) {
	name := n.kind.Name
	if first {
		if err := m.w.probe(n.addr); err != nil {
			m.rep.fail(name, m.round, fmt.Errorf("%s: %w", m.w.Name, err))
			m.rep.add(m.round, name, m.w.Name, loadResult{}, false)
			m.skip[name] = true
			return
		}
		if name == "preconf" || name == "preconf-base" {
			m.rt0[name] = scrapeMetrics(n.addr) // runtime.go; nil if the node has no /metrics
		}
	}
	cfg := loadConfig{Addr: n.addr, Conns: m.o.Conns, Duration: m.o.Warmup, MaxRequests: m.o.MaxRequests, Bodies: m.w.Bodies, Check: checkCalls(m.w.Calls)}
	if m.o.Warmup > 0 {
		if _, err := runLoad(cfg); err != nil {
			m.fail(name, err)
			return
		}
	}
	cfg.Duration = m.o.Duration / 2
	var prof chan error
	if first && m.o.Profile && name == "preconf" && m.round == m.o.Rounds-1 {
		prof = make(chan error, 1)
		go func() {
			prof <- captureProfile(filepath.Join(m.o.Out, "preconf-"+fileName(m.w.Name)+".pprof"), cfg.Duration)
		}()
	}
	win, err := n.window(cfg)
	if prof != nil {
		if perr := <-prof; perr != nil {
			fmt.Fprintf(m.e.log, "  profile %s: %v\n", m.w.Name, perr)
		}
	}
	if err != nil {
		m.fail(name, err)
		return
	}
	m.windows[name] = append(m.windows[name], win)
}

func (m *workloadRun) fail(name string, err error) {
	m.rep.fail(name, m.round, err)
	fmt.Fprintf(m.e.log, "  %s: %v\n", name, err)
	m.failed[name] = true
}

// record merges a node's windows into its result for the round.
func (m *workloadRun) record(n *runningNode) {
	name := n.kind.Name
	res := mergeWindows(m.windows[name]...)
	if rt0 := m.rt0[name]; rt0 != nil {
		res.Runtime = runtimeDelta(rt0, scrapeMetrics(n.addr), res.Requests)
	}
	if res.Errors > 0 {
		m.rep.fail(name, m.round, fmt.Errorf("%s: %d failed requests, first: %s", m.w.Name, res.Errors, res.FirstError))
	}
	m.rep.add(m.round, name, m.w.Name, res, true)
	fmt.Fprintf(m.e.log, "  %-8s %-28s %9.0f req/s  p50 %6s  p99 %6s (in socket %6s)  max %7s  cpu/req %5.1fµs (generator %5.1fµs)  errors %d%s\n", name, m.w.Name, res.RPS,
		fmtDur(res.P50), fmtDur(res.P99), fmtDur(res.SockP99), fmtDur(res.Max), us(res.ServerCPU), us(res.ClientCPU), res.Errors, res.Runtime)
}

// probe sends the workload's first body once with net/http and checks the
// answer fully, so that a node that lacks a method or holds other state
// fails loudly instead of being measured.
func (w workload) probe(addr string) error {
	raw, err := post(addr, w.Bodies[0])
	if err != nil {
		return err
	}
	return w.verify(raw)
}

// reversed is a reversed copy.
func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

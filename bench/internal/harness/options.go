package harness

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/internal/peers"
)

// Options are the flags every experiment shares: how long and how hard to
// load, which nodes, where peers are cached and results written. Each
// experiment has its own Options beside these.
type Options struct {
	Duration    time.Duration `json:"duration_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	Rounds      int           `json:"rounds"`
	Conns       int           `json:"conns"`
	MaxRequests int64         `json:"max_requests"`
	Nodes       []string      `json:"nodes"`
	Cache       string        `json:"-"`
	Out         string        `json:"-"`
	NoInstall   bool          `json:"-"`
	Profile     bool          `json:"-"`
	// Pin runs the load generator and the nodes on separate CPUs (pin.go).
	Pin  bool `json:"pin,omitempty"`
	Keep bool `json:"-"`
	// BaseRepo is the checkout preconf-base is built from.
	BaseRepo string `json:"preconf_base,omitempty"`

	nodes string // -nodes as given, resolved by Finish
}

// AddFlags registers the shared flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measuring time per workload, node and round")
	fs.DurationVar(&o.Warmup, "warmup", 500*time.Millisecond, "unmeasured load before each measurement")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds; the node order rotates every round (A B C, B C A, …)")
	fs.IntVar(&o.Conns, "conns", 32, "concurrent keep-alive connections")
	fs.Int64Var(&o.MaxRequests, "max-requests", 2_000_000, "request budget per measurement (bounds memory and time)")
	fs.StringVar(&o.nodes, "nodes", "preconf,anvil,geth", "nodes to compare (comma separated; preconf is the reference)")
	fs.StringVar(&o.Cache, "cache", peers.DefaultCache(), "where installed peers are kept")
	fs.StringVar(&o.Out, "out", ".bench/results", "directory for the JSON and Markdown results")
	fs.BoolVar(&o.NoInstall, "no-install", false, "do not install missing peers (report them missing)")
	fs.BoolVar(&o.Profile, "profile", false, "collect a CPU profile of preconf during each workload of the last round (into -out)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the scratch dir (node logs and data) after the run")
	fs.StringVar(&o.BaseRepo, "preconf-base", "", "also run preconf built from this checkout (e.g. a `git worktree` of main) as node preconf-base, so preconf/preconf-base is a before/after ratio from one run")
	fs.BoolVar(&o.Pin, "pin", false, "run the load generator on the first quarter of the CPUs (at least one) and the nodes on the rest (taskset), so that they do not share cores")
}

// Finish checks the parsed flags and resolves -nodes and -preconf-base.
func (o *Options) Finish() error {
	o.Nodes = nil
	for _, n := range strings.Split(o.nodes, ",") {
		n = strings.TrimSpace(n)
		if _, ok := Kinds[n]; !ok {
			return fmt.Errorf("unknown node %q (preconf, preconf-base, anvil, geth)", n)
		}
		if !slices.Contains(o.Nodes, n) {
			o.Nodes = append(o.Nodes, n)
		}
	}
	if len(o.Nodes) == 0 || o.Nodes[0] != "preconf" {
		return errors.New("-nodes must start with preconf (the ratios are preconf/peer)")
	}
	if o.BaseRepo != "" {
		if abs, err := filepath.Abs(o.BaseRepo); err == nil {
			o.BaseRepo = abs
		}
		if !slices.Contains(o.Nodes, "preconf-base") {
			o.Nodes = slices.Insert(o.Nodes, 1, "preconf-base")
		}
	} else if slices.Contains(o.Nodes, "preconf-base") {
		return errors.New("node preconf-base needs -preconf-base DIR")
	}
	if o.Duration <= 0 || o.Rounds <= 0 || o.Conns <= 0 || o.Warmup < 0 {
		return errors.New("-duration, -rounds and -conns must be positive")
	}
	return nil
}
